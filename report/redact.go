package report

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/url"
	"strings"
)

// Redacted replaces every secret value in a redacted configuration; inside
// URLs, where brackets would be escaped, urlRedacted does.
const (
	Redacted    = "[REDACTED]"
	urlRedacted = "REDACTED"
)

// Redact returns a deep copy of cfg (a map or a struct that encodes as a
// JSON object; nil gives an empty map) with secrets replaced by Redacted:
//
//   - the value of any key that names a secret: a key whose name, lowercased
//     and stripped of '-', '_', '.' and spaces, ends in token, apikey, secret,
//     password, passwd, passphrase, privatekey, accesskey, credential(s),
//     authorization or cookie, or is key, auth, pass, pwd or bearer. Keys that
//     only say where a secret lives (api_key_env, token_file) end otherwise
//     and are kept; so are LLM token counts (max_tokens ends in "tokens");
//   - in any string: the value of a header written "Name: value" or
//     "Name=value" whose name names a secret, the credentials after "Bearer "
//     or "Basic ", a URL's password and its secret query parameters, and
//     strings shaped like OpenAI keys ("sk-" and 16 or more characters).
func Redact(cfg any) (map[string]any, error) {
	if cfg == nil {
		return map[string]any{}, nil
	}
	b, err := json.Marshal(cfg)
	if err != nil {
		return nil, fmt.Errorf("redact config: %w", err)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("redact config: %w", err)
	}
	m, ok := v.(map[string]any)
	if !ok {
		if v == nil {
			return map[string]any{}, nil
		}
		return nil, fmt.Errorf("redact config: want a JSON object, got %T", v)
	}
	return redactValue(m).(map[string]any), nil
}

func redactValue(v any) any {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			if secretName(k) && e != nil && e != "" {
				x[k] = Redacted
				continue
			}
			x[k] = redactValue(e)
		}
		return x
	case []any:
		for i, e := range x {
			x[i] = redactValue(e)
		}
		return x
	case string:
		return redactString(x)
	}
	return v
}

// secretName reports whether a key or header name names a secret.
func secretName(name string) bool {
	n := strings.Map(func(r rune) rune {
		switch r {
		case '-', '_', '.', ' ':
			return -1
		}
		return r
	}, strings.ToLower(name))
	switch n {
	case "key", "auth", "pass", "pwd", "bearer":
		return true
	}
	for _, suffix := range []string{"token", "apikey", "secret", "password", "passwd", "passphrase",
		"privatekey", "accesskey", "credential", "credentials", "authorization", "cookie"} {
		if strings.HasSuffix(n, suffix) {
			return true
		}
	}
	return false
}

// redactString removes secrets from one string value.
func redactString(s string) string {
	if s == "" {
		return s
	}
	if strings.HasPrefix(s, "sk-") && len(s) >= 19 && !strings.ContainsAny(s, " \t") {
		return Redacted
	}
	for _, scheme := range []string{"Bearer ", "Basic ", "bearer ", "basic "} {
		if strings.HasPrefix(s, scheme) {
			return scheme + Redacted
		}
	}
	if i := strings.IndexAny(s, ":="); i > 0 && !strings.Contains(s[:i], "/") && secretName(strings.TrimSpace(s[:i])) {
		if s[i] == ':' {
			return s[:i] + ": " + Redacted
		}
		return s[:i] + "=" + Redacted
	}
	if strings.Contains(s, "://") {
		if u, err := url.Parse(s); err == nil && u.Host != "" {
			changed := false
			if _, ok := u.User.Password(); ok {
				u.User = url.UserPassword(u.User.Username(), urlRedacted)
				changed = true
			}
			if q := u.Query(); len(q) > 0 {
				for k := range q {
					if secretName(k) {
						q.Set(k, urlRedacted)
						changed = true
					}
				}
				if changed {
					u.RawQuery = q.Encode()
				}
			}
			if changed {
				return u.String()
			}
		}
	}
	return s
}

package js

import (
	"crypto/md5"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"hash"
	"net/http"
	"net/url"
	"strings"
)

// digestAuthorization answers a 401's Digest challenge (RFC 7616: MD5 or
// SHA-256, qop auth or none) with the credentials of spec's URL, as k6's
// params.auth "digest" does. ok is false when the response carries no
// challenge it can answer or the URL has no credentials.
func digestAuthorization(spec *httpSpec, resp *http.Response) (string, bool) {
	u, err := url.Parse(spec.url)
	if err != nil || u.User == nil {
		return "", false
	}
	ch, ok := digestChallenge(resp.Header.Values("WWW-Authenticate"))
	if !ok {
		return "", false
	}
	var newHash func() hash.Hash
	switch strings.ToUpper(ch["algorithm"]) {
	case "", "MD5":
		newHash = md5.New
	case "SHA-256":
		newHash = sha256.New
	default:
		return "", false
	}
	h := func(s string) string {
		x := newHash()
		x.Write([]byte(s))
		return hex.EncodeToString(x.Sum(nil))
	}
	pass, _ := u.User.Password()
	user := u.User.Username()
	uri := u.RequestURI()
	ha1 := h(user + ":" + ch["realm"] + ":" + pass)
	ha2 := h(spec.method + ":" + uri)
	var qop string
	for q := range strings.SplitSeq(ch["qop"], ",") {
		if strings.TrimSpace(q) == "auth" {
			qop = "auth"
		}
	}
	if ch["qop"] != "" && qop == "" {
		return "", false // auth-int only
	}
	var b strings.Builder
	fmt.Fprintf(&b, `Digest username="%s", realm="%s", nonce="%s", uri="%s"`, user, ch["realm"], ch["nonce"], uri)
	if qop == "" {
		fmt.Fprintf(&b, `, response="%s"`, h(ha1+":"+ch["nonce"]+":"+ha2))
	} else {
		c := make([]byte, 8)
		_, _ = rand.Read(c)
		cnonce, nc := hex.EncodeToString(c), "00000001"
		fmt.Fprintf(&b, `, qop=auth, nc=%s, cnonce="%s", response="%s"`, nc, cnonce,
			h(ha1+":"+ch["nonce"]+":"+nc+":"+cnonce+":auth:"+ha2))
	}
	if ch["opaque"] != "" {
		fmt.Fprintf(&b, `, opaque="%s"`, ch["opaque"])
	}
	if ch["algorithm"] != "" {
		fmt.Fprintf(&b, `, algorithm=%s`, ch["algorithm"])
	}
	return b.String(), true
}

// digestChallenge reads the parameters of the first Digest challenge.
func digestChallenge(values []string) (map[string]string, bool) {
	for _, v := range values {
		rest, ok := strings.CutPrefix(strings.TrimSpace(v), "Digest ")
		if !ok {
			continue
		}
		out := map[string]string{}
		for rest != "" {
			rest = strings.TrimLeft(rest, " ,")
			k, after, ok := strings.Cut(rest, "=")
			if !ok {
				break
			}
			k = strings.ToLower(strings.TrimSpace(k))
			if strings.HasPrefix(after, `"`) {
				end := strings.IndexByte(after[1:], '"')
				if end < 0 {
					return nil, false
				}
				out[k], rest = after[1:end+1], after[end+2:]
				continue
			}
			val, next, _ := strings.Cut(after, ",")
			out[k], rest = strings.TrimSpace(val), next
		}
		return out, out["nonce"] != ""
	}
	return nil, false
}

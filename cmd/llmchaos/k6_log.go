package main

import (
	"fmt"
	"strings"

	"github.com/llmchaos/llmchaos/xk6-llm/js"
)

// logOutput is k6's --log-output, parsed: where a script run's log lines
// go (stderr, stdout, none, or a file appended to) and, for a file, the
// least severe level it keeps.
type logOutput struct {
	dest  string // "stderr", "stdout", "none", "file"
	path  string // dest "file"
	level string // dest "file": level=NAME ("": all)
}

// parseLogOutput reads a --log-output value as k6 does: stderr (k6's
// default), stdout, none, file=PATH[,level=NAME]. k6's loki output sends
// to a Loki server, which llmchaos does not do: an error that says what to
// use instead.
func parseLogOutput(v string) (logOutput, error) {
	switch {
	case v == "" || v == "stderr":
		return logOutput{dest: "stderr"}, nil
	case v == "stdout" || v == "none":
		return logOutput{dest: v}, nil
	case strings.HasPrefix(v, "loki"):
		return logOutput{}, fmt.Errorf("--log-output %s: k6's Loki log output is not supported by llmchaos: "+
			"use stderr, stdout, none or file=PATH[,level=NAME]", v)
	case strings.HasPrefix(v, "file"):
		o := logOutput{dest: "file"}
		for i, kv := range strings.Split(v, ",") {
			k, val, _ := strings.Cut(kv, "=")
			switch {
			case i == 0 && k == "file":
				o.path = val
			case i > 0 && k == "level":
				if !js.ValidLogLevel(val) {
					return logOutput{}, fmt.Errorf("--log-output %s: unknown log level %q: "+
						"want panic, fatal, error, warning, info, debug or trace", v, val)
				}
				o.level = val
			default:
				return logOutput{}, fmt.Errorf("--log-output %s: unknown key %q: want file=PATH[,level=NAME]", v, k)
			}
		}
		if o.path == "" {
			return logOutput{}, fmt.Errorf("--log-output %s: want file=PATH[,level=NAME], with a path", v)
		}
		return o, nil
	default:
		return logOutput{}, fmt.Errorf("--log-output %q: want stderr, stdout, none or file=PATH[,level=NAME], as k6's", v)
	}
}

// validLogFormat says whether v is one of k6's --log-format values ("" is
// text, k6's default).
func validLogFormat(v string) bool {
	return v == "" || v == js.LogText || v == js.LogJSON || v == js.LogRaw
}

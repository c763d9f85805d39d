package js

import (
	"crypto/rand"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"
)

// Log formats, k6's --log-format: LogText (logrus's text form, the
// default), LogJSON (one JSON object a line, logrus's JSON form), LogRaw
// (the message alone).
const (
	LogText = "text"
	LogJSON = "json"
	LogRaw  = "raw"
)

// logRanks orders k6's (logrus's) level names, most severe first: a
// log output's level=NAME keeps the lines up to NAME's rank.
var logRanks = []string{"panic", "fatal", "error", "warning", "info", "debug", "trace"}

// ValidLogLevel says whether name is one of k6's log levels (logrus's
// names; "warn" is "warning").
func ValidLogLevel(name string) bool {
	return name == "warn" || slices.Contains(logRanks, name)
}

// logLevels are k6's console and log levels by the name a script's
// console method has, with the name k6's text log gives each (console.warn
// is "warning", as logrus names it) and the colour of its terminal form.
var logLevels = map[string]struct {
	name  string
	color int
}{
	"debug": {"debug", 37}, // gray
	"log":   {"info", 36},  // blue
	"info":  {"info", 36},
	"warn":  {"warning", 33}, // yellow
	"error": {"error", 31},   // red
}

// logField is one key=value that follows a log line's message.
type logField struct{ key, value string }

// logFormat writes lines as k6's logger (logrus's text form) does:
//
//	time="2026-01-02T15:04:05Z" level=info msg="a b" source=console
//
// and, when color (k6 colours its log whenever its stderr is a terminal and
// --no-color is not given, its --console-output file included),
//
//	\x1b[36mINFO\x1b[0m[0003] a b<padded to 44>  \x1b[36msource\x1b[0m=console
//
// where [0003] counts the seconds since start.
//
// kind LogJSON writes logrus's JSON form instead, the fields and level, msg
// and time in key order:
//
//	{"level":"info","msg":"a b","source":"console","time":"2026-01-02T15:04:05Z"}
//
// and LogRaw the message alone. maxLevel, when set, drops the lines less
// severe than it (a log output's level=NAME).
type logFormat struct {
	color    bool
	start    time.Time
	kind     string
	maxLevel string
}

// line renders one log line, newline included, at now; "" when maxLevel
// drops it.
func (f logFormat) line(now time.Time, level, msg string, fields ...logField) string {
	lv, ok := logLevels[level]
	if !ok {
		lv = logLevels["info"]
	}
	if f.maxLevel != "" {
		maxLevel := f.maxLevel
		if maxLevel == "warn" {
			maxLevel = "warning"
		}
		if slices.Index(logRanks, lv.name) > slices.Index(logRanks, maxLevel) {
			return ""
		}
	}
	var b strings.Builder
	switch {
	case f.kind == LogRaw:
		b.WriteString(strings.TrimSuffix(msg, "\n"))
	case f.kind == LogJSON:
		m := map[string]string{"level": lv.name, "msg": msg, "time": now.Format(time.RFC3339)}
		for _, fd := range fields {
			m[fd.key] = fd.value
		}
		j, _ := json.Marshal(m) // a map of strings always marshals
		b.Write(j)
	case f.color:
		msg = strings.TrimSuffix(msg, "\n")
		fmt.Fprintf(&b, "\x1b[%dm%s\x1b[0m[%04d] %-44s ", lv.color, strings.ToUpper(lv.name[:4]),
			int(now.Sub(f.start)/time.Second), msg)
		for _, fd := range fields {
			fmt.Fprintf(&b, " \x1b[%dm%s\x1b[0m=%s", lv.color, fd.key, logValue(fd.value))
		}
	default:
		b.WriteString("time=" + logValue(now.Format(time.RFC3339)) + " level=" + lv.name)
		if msg != "" {
			b.WriteString(" msg=" + logValue(msg))
		}
		for _, fd := range fields {
			b.WriteString(" " + fd.key + "=" + logValue(fd.value))
		}
	}
	b.WriteByte('\n')
	return b.String()
}

// logValue quotes a value as logrus does: Go-quoted unless it is made of
// letters, digits and -._/@^+ only.
func logValue(s string) string {
	for _, c := range s {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.ContainsRune("-._/@^+", c)) {
			return fmt.Sprintf("%q", s)
		}
	}
	return s
}

// newRequestID is a random UUID (version 4), the request_id that pairs a
// request's --http-debug line with its response's, as k6's.
func newRequestID() string {
	var u [16]byte
	_, _ = rand.Read(u[:])
	u[6] = u[6]&0x0f | 0x40
	u[8] = u[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", u[0:4], u[4:6], u[6:8], u[8:10], u[10:16])
}

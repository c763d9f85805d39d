package shardjob

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/llmchaos/llmchaos/internal/kube"
	"github.com/llmchaos/llmchaos/internal/kube/api/corev1"
	"github.com/llmchaos/llmchaos/report"
)

// LogSource reads the log of a shard's load container: what it wrote to
// stdout and stderr, interleaved by line as the container runtime keeps
// them. It must be safe for concurrent use.
type LogSource interface {
	Log(ctx context.Context, pod *corev1.Pod) ([]byte, error)
}

// PodLogs reads logs through the API server (pods/log).
type PodLogs struct {
	Client *kube.Clientset
}

var _ LogSource = PodLogs{}

// Log implements LogSource.
func (l PodLogs) Log(ctx context.Context, pod *corev1.Pod) ([]byte, error) {
	b, err := l.Client.CoreV1().Pods(pod.Namespace).GetLogs(pod.Name, &corev1.PodLogOptions{Container: Container}).DoRaw(ctx)
	if err != nil {
		return nil, fmt.Errorf("log of pod %s/%s: %w", pod.Namespace, pod.Name, err)
	}
	return b, nil
}

// ErrNoReport is wrapped by ParseReport's error when a log holds no
// report.
var ErrNoReport = errors.New("no JSON run report in the log")

// ParseReport finds the JSON run report in a shard's log: `load --out -`
// writes it, indented, to stdout, so it starts at a line that is only "{";
// the other lines (stderr's: the start line, the summary, warnings) come
// before or after it, never inside, since load writes them from the same
// goroutine. The last report that decodes is returned. Without one, the
// error ends with the log's last lines, which say why the shard failed.
func ParseReport(log []byte) (*report.Document, error) {
	var (
		doc     *report.Document
		lastErr error
	)
	for off := 0; off < len(log); {
		line, rest, _ := bytes.Cut(log[off:], []byte("\n"))
		if string(bytes.TrimRight(line, "\r")) == "{" {
			d, err := report.Decode(bytes.NewReader(log[off:]))
			if err == nil {
				doc = d
			} else {
				lastErr = err
			}
		}
		off = len(log) - len(rest)
		if len(rest) == 0 {
			break
		}
	}
	if doc != nil {
		return doc, nil
	}
	if lastErr != nil {
		return nil, fmt.Errorf("%w (%v); the log ends:\n%s", ErrNoReport, lastErr, tail(log, 10))
	}
	return nil, fmt.Errorf("%w; the log ends:\n%s", ErrNoReport, tail(log, 10))
}

// ParseShardLog reads what a shard (`llmchaos load --framed`) handed back
// in its log: its report and its request lines (Unframe). An error wraps
// ErrLost when the log does not hold them whole, and quotes the end of the
// log's other lines, which say why.
func ParseShardLog(log []byte) (*report.Document, []byte, error) {
	f, other, err := Unframe(log)
	if err != nil {
		return nil, nil, fmt.Errorf("%w; the rest of the log ends:\n%s", err, tail(other, 10))
	}
	doc, err := report.Decode(bytes.NewReader(f.Report))
	if err != nil {
		return nil, nil, fmt.Errorf("%w: its report does not decode: %v", ErrLost, err)
	}
	return doc, f.Requests, nil
}

// tail returns the last n lines of b, indented.
func tail(b []byte, n int) string {
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	if len(lines) == 1 && lines[0] == "" {
		return "  (empty)"
	}
	return "  " + strings.Join(lines, "\n  ")
}

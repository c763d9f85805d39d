package shardjob

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"strconv"
	"sync"

	"github.com/llmchaos/llmchaos/internal/kube"
	"github.com/llmchaos/llmchaos/internal/kube/api/batchv1"
	"github.com/llmchaos/llmchaos/internal/kube/api/corev1"
	"github.com/llmchaos/llmchaos/internal/kube/cache"
)

// Follower streams the log of a shard's load container as it is written,
// from its start until the container ends (or ctx does). It must be safe
// for concurrent use.
type Follower interface {
	Follow(ctx context.Context, pod *corev1.Pod, w io.Writer) error
}

var _ Follower = PodLogs{}

// Follow implements Follower through the API server (pods/log, follow).
func (l PodLogs) Follow(ctx context.Context, pod *corev1.Pod, w io.Writer) error {
	rc, err := l.Client.CoreV1().Pods(pod.Namespace).GetLogs(pod.Name, &corev1.PodLogOptions{Container: Container, Follow: true}).Stream(ctx)
	if err != nil {
		return fmt.Errorf("follow the log of pod %s/%s: %w", pod.Namespace, pod.Name, err)
	}
	defer rc.Close()
	if _, err := io.Copy(w, rc); err != nil {
		return fmt.Errorf("follow the log of pod %s/%s: %w", pod.Namespace, pod.Name, err)
	}
	return nil
}

// LineFunc receives one line (without its newline) of a shard's log as
// soon as it has been followed; line is only valid during the call.
type LineFunc func(shard int, line []byte)

// following follows the log of every shard of a Job while it runs: the
// first pod of each completion index whose container has started (Running,
// or already ended) is followed once, its log kept whole and each line
// handed to lines.
type following struct {
	client *kube.Clientset
	logs   Follower
	lines  LineFunc
	n      int

	stopInform context.CancelFunc

	mu      sync.Mutex
	started map[int]bool
	shards  []*followedLog
	wg      sync.WaitGroup
}

// LineLog is the output of one shard as it comes: it keeps every byte and
// hands each complete line (without its newline) to Fn as it arrives; the
// frame lines of `llmchaos load --framed` are reassembled, and each request
// line they carry is handed to Fn once its last frame line has come whole
// (a damaged frame line is left to Unframe, at the end). It is safe for
// concurrent use.
type LineLog struct {
	Shard int
	Fn    LineFunc // nil: the bytes are only kept

	mu      sync.Mutex
	buf     bytes.Buffer
	pending int // offset in buf of the line not yet complete
	frames  liveFrames
}

// Write implements io.Writer.
func (l *LineLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.buf.Write(p)
	if l.Fn == nil {
		return len(p), nil
	}
	b := l.buf.Bytes()
	for {
		i := bytes.IndexByte(b[l.pending:], '\n')
		if i < 0 {
			break
		}
		line := bytes.TrimSuffix(b[l.pending:l.pending+i], []byte("\r"))
		l.pending += i + 1
		if req, ok := l.frames.line(line); ok {
			if req != nil {
				l.Fn(l.Shard, req)
			}
			continue
		}
		l.Fn(l.Shard, line)
	}
	return len(p), nil
}

// Bytes returns a copy of everything written so far.
func (l *LineLog) Bytes() []byte {
	l.mu.Lock()
	defer l.mu.Unlock()
	return bytes.Clone(l.buf.Bytes())
}

// followedLog is one shard's followed log and how its stream ended.
type followedLog struct {
	LineLog

	state sync.Mutex
	pod   string
	done  bool  // the stream ended
	err   error // why it ended early (nil: the container ended)
}

// follow starts following the shards of job (n of them) in the
// background, until every stream ended or ctx does.
func follow(ctx context.Context, client *kube.Clientset, job *batchv1.Job, n int, logs Follower, lines LineFunc) *following {
	f := &following{client: client, logs: logs, lines: lines, n: n, started: map[int]bool{}, shards: make([]*followedLog, n)}
	for i := range f.shards {
		f.shards[i] = &followedLog{LineLog: LineLog{Shard: i, Fn: lines}}
	}
	lw := kube.PodsListWatch(client, job.Namespace, batchv1.ControllerUidLabel+"="+string(job.UID))
	informCtx, stop := context.WithCancel(ctx)
	f.stopInform = stop
	seen := func(obj any) {
		if p, ok := obj.(*corev1.Pod); ok {
			f.pod(ctx, p)
			if f.allStarted() {
				stop()
			}
		}
	}
	f.wg.Go(func() {
		_ = kube.Inform(informCtx, lw, nil, cache.ResourceEventHandlerFuncs{
			AddFunc:    func(obj any) { seen(obj) },
			UpdateFunc: func(_, obj any) { seen(obj) },
		})
	})
	return f
}

// pod starts following p when it is the first of its index to have
// started.
func (f *following) pod(ctx context.Context, p *corev1.Pod) {
	idx, err := strconv.Atoi(p.Annotations[indexAnnotation])
	if err != nil || idx < 0 || idx >= f.n || !containerStarted(p) {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.started[idx] {
		return
	}
	f.started[idx] = true
	s := f.shards[idx]
	s.state.Lock()
	s.pod = p.Name
	s.state.Unlock()
	f.wg.Go(func() {
		err := f.logs.Follow(ctx, p, &s.LineLog)
		s.state.Lock()
		s.done, s.err = true, err
		s.state.Unlock()
	})
}

func (f *following) allStarted() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.started) == f.n
}

// containerStarted reports whether p's load container has started (its
// log can be followed).
func containerStarted(p *corev1.Pod) bool {
	switch p.Status.Phase {
	case corev1.PodRunning, corev1.PodSucceeded, corev1.PodFailed:
		return true
	}
	return false
}

// wait stops looking for pods and waits until every stream followed
// ended, or ctx does. A shard whose pod was not seen started is read
// whole afterwards (Run's collect).
func (f *following) wait(ctx context.Context) {
	f.stopInform()
	done := make(chan struct{})
	go func() { f.wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
	}
}

// followed is log, for a nil f too (nothing followed).
func (f *following) followed(i int) (pod string, log []byte, ok bool) {
	if f == nil {
		return "", nil, false
	}
	return f.log(i)
}

// log returns shard i's followed log when its stream ended with its
// container, and whether it did.
func (f *following) log(i int) (pod string, log []byte, ok bool) {
	s := f.shards[i]
	s.state.Lock()
	defer s.state.Unlock()
	if !s.done || s.err != nil {
		return s.pod, nil, false
	}
	return s.pod, s.Bytes(), true
}

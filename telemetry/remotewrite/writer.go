package remotewrite

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/golang/snappy"
	"github.com/llmchaos/llmchaos/internal/promexpo"
)

// Defaults applied by New to zero Options fields.
const (
	// DefaultInterval is the time between two pushes.
	DefaultInterval = 5 * time.Second
	// DefaultTimeout bounds one HTTP attempt.
	DefaultTimeout = 10 * time.Second
	// DefaultRetries is the number of extra attempts for a retryable failure.
	DefaultRetries = 3
	// DefaultBackoff is the wait before the first retry; it doubles after each.
	DefaultBackoff = 250 * time.Millisecond
	// DefaultFinalTimeout bounds the last push, made after Run's context ended.
	DefaultFinalTimeout = 15 * time.Second
)

// Options configures a Writer. URL and Gatherer are required; a zero value
// elsewhere takes the default named beside it.
type Options struct {
	URL      string            // the receiver, e.g. http://127.0.0.1:9090/api/v1/write
	Gatherer promexpo.Gatherer // what to push, gathered anew for every push

	Interval     time.Duration // between pushes in Run (DefaultInterval)
	Timeout      time.Duration // one HTTP attempt (DefaultTimeout)
	Retries      int           // extra attempts after a retryable failure (DefaultRetries); negative: none
	Backoff      time.Duration // wait before the first retry, doubling (DefaultBackoff)
	FinalTimeout time.Duration // the push made when Run's context ends (DefaultFinalTimeout)

	// ExternalLabels are added to every series that lacks them (job,
	// instance, run id).
	ExternalLabels map[string]string
	// Client sends the requests (http.DefaultClient when nil).
	Client *http.Client
	// Now stamps the samples (time.Now when nil).
	Now func() time.Time
	// OnError, when set, is called from Run's goroutine with each failed
	// push, as it happens.
	OnError func(error)
}

// Writer pushes a Gatherer's series by remote write. Push is safe for
// concurrent use; Run is meant to be called once.
type Writer struct {
	url          string
	gatherer     promexpo.Gatherer
	interval     time.Duration
	timeout      time.Duration
	retries      int
	backoff      time.Duration
	finalTimeout time.Duration
	external     []Label
	client       *http.Client
	now          func() time.Time
	onError      func(error)

	mu    sync.Mutex
	stats Stats
	buf   []byte // protobuf scratch, reused under mu
}

// Stats counts a Writer's pushes.
type Stats struct {
	Pushes   int // pushes attempted (each may take several HTTP attempts)
	Failed   int // pushes that failed after their retries
	Attempts int // HTTP requests made
	Series   int // series sent by the last successful push
	Bytes    int // compressed body size of the last push
}

// HTTPError is a push the receiver answered with a non-2xx status.
type HTTPError struct {
	Status int
	Body   string // the start of the response body, for the receiver's reason
}

func (e *HTTPError) Error() string {
	if e.Body == "" {
		return fmt.Sprintf("HTTP %d", e.Status)
	}
	return fmt.Sprintf("HTTP %d: %s", e.Status, e.Body)
}

// retryable reports whether another attempt may succeed: server errors and
// throttling may pass, other 4xx reject the data itself.
func (e *HTTPError) retryable() bool {
	return e.Status >= 500 || e.Status == http.StatusTooManyRequests
}

// RunError is what Run returns when any push failed.
type RunError struct {
	Pushes, Failed int
	Last           error // the last failure
}

func (e *RunError) Error() string {
	return fmt.Sprintf("remote write: %d of %d pushes failed, last: %v", e.Failed, e.Pushes, e.Last)
}

// Unwrap returns the last failure.
func (e *RunError) Unwrap() error { return e.Last }

// Validate reports every problem of o at once. It fills in nothing.
func (o Options) Validate() error {
	var errs []error
	if o.URL == "" {
		errs = append(errs, errors.New("remote write: URL is empty; give the receiver's write endpoint, e.g. http://127.0.0.1:9090/api/v1/write"))
	} else if u, err := url.Parse(o.URL); err != nil {
		errs = append(errs, fmt.Errorf("remote write: URL %q: %w", o.URL, err))
	} else if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		errs = append(errs, fmt.Errorf("remote write: URL %q: want http:// or https:// and a host", o.URL))
	}
	if o.Gatherer == nil {
		errs = append(errs, errors.New("remote write: Gatherer is nil"))
	}
	for name, d := range map[string]time.Duration{"interval": o.Interval, "timeout": o.Timeout,
		"backoff": o.Backoff, "final timeout": o.FinalTimeout} {
		if d < 0 {
			errs = append(errs, fmt.Errorf("remote write: %s %v is negative", name, d))
		}
	}
	for name := range o.ExternalLabels {
		if name == "" || name == "__name__" {
			errs = append(errs, fmt.Errorf("remote write: external label name %q is not allowed", name))
		}
	}
	return errors.Join(errs...)
}

// withDefaults returns o with every zero field set to its default.
func (o Options) withDefaults() Options {
	if o.Interval == 0 {
		o.Interval = DefaultInterval
	}
	if o.Timeout == 0 {
		o.Timeout = DefaultTimeout
	}
	if o.Retries == 0 {
		o.Retries = DefaultRetries
	} else if o.Retries < 0 {
		o.Retries = 0
	}
	if o.Backoff == 0 {
		o.Backoff = DefaultBackoff
	}
	if o.FinalTimeout == 0 {
		o.FinalTimeout = DefaultFinalTimeout
	}
	if o.Client == nil {
		o.Client = http.DefaultClient
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	return o
}

// New validates opts and returns a Writer.
func New(opts Options) (*Writer, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	opts = opts.withDefaults()
	ext := make([]Label, 0, len(opts.ExternalLabels))
	for n, v := range opts.ExternalLabels {
		ext = append(ext, Label{Name: n, Value: v})
	}
	slices.SortFunc(ext, func(a, b Label) int { return strings.Compare(a.Name, b.Name) })
	return &Writer{
		url: opts.URL, gatherer: opts.Gatherer, interval: opts.Interval, timeout: opts.Timeout,
		retries: opts.Retries, backoff: opts.Backoff, finalTimeout: opts.FinalTimeout,
		external: ext, client: opts.Client, now: opts.Now, onError: opts.OnError,
	}, nil
}

// Stats returns the counts so far.
func (w *Writer) Stats() Stats {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.stats
}

// Run pushes at once, then every Interval until ctx ends, then a last time
// (under its own FinalTimeout, so the end of the run is never lost). It
// returns nil when every push succeeded, else a *RunError.
func (w *Writer) Run(ctx context.Context) error {
	t := time.NewTicker(w.interval)
	defer t.Stop()
	var last error
	pushes, failed := 0, 0
	final := false
	push := func(ctx context.Context) {
		pushes++
		err := w.Push(ctx)
		if err != nil && ctx.Err() != nil && !final {
			// Cut short by the end of the run: the final push, made
			// next, sends the same series with newer values.
			pushes--
			w.uncount()
			return
		}
		if err != nil {
			failed++
			last = err
			if w.onError != nil {
				w.onError(err)
			}
		}
	}
	push(ctx)
	for ctx.Err() == nil {
		select {
		case <-ctx.Done():
		case <-t.C:
			push(ctx)
		}
	}
	fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), w.finalTimeout)
	final = true
	push(fctx)
	cancel()
	if failed > 0 {
		return &RunError{Pushes: pushes, Failed: failed, Last: last}
	}
	return nil
}

// Push gathers, encodes and sends the series once, retrying as the package
// documentation says.
func (w *Writer) Push(ctx context.Context) error {
	mfs := w.gatherer.Gather()
	series := FromFamilies(mfs, w.now().UnixMilli(), w.external)

	w.mu.Lock()
	w.buf = AppendWriteRequest(w.buf[:0], series)
	body := snappy.Encode(nil, w.buf)
	w.mu.Unlock()

	attempts, err := w.send(ctx, body)
	w.count(err == nil, attempts, len(series), len(body))
	return err
}

// uncount takes back the last push, which failed only because Run's
// context ended.
func (w *Writer) uncount() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.stats.Pushes--
	w.stats.Failed--
}

func (w *Writer) count(ok bool, attempts, series, size int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.stats.Pushes++
	w.stats.Attempts += attempts
	w.stats.Bytes = size
	if ok {
		w.stats.Series = series
	} else {
		w.stats.Failed++
	}
}

// send POSTs body, retrying retryable failures with doubling waits.
func (w *Writer) send(ctx context.Context, body []byte) (attempts int, err error) {
	wait := w.backoff
	for {
		attempts++
		err = w.attempt(ctx, body)
		if err == nil {
			return attempts, nil
		}
		if he, ok := errors.AsType[*HTTPError](err); ok && !he.retryable() {
			return attempts, fmt.Errorf("remote write %s: rejected: %w", w.url, err)
		}
		if attempts > w.retries || ctx.Err() != nil {
			return attempts, fmt.Errorf("remote write %s: %d attempts: %w", w.url, attempts, err)
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return attempts, fmt.Errorf("remote write %s: %d attempts, then %w: %w", w.url, attempts, ctx.Err(), err)
		case <-t.C:
		}
		wait *= 2
	}
}

// attempt makes one HTTP request.
func (w *Writer) attempt(ctx context.Context, body []byte) error {
	actx, cancel := context.WithTimeout(ctx, w.timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(actx, http.MethodPost, w.url, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Encoding", "snappy")
	req.Header.Set("Content-Type", "application/x-protobuf")
	req.Header.Set("User-Agent", "llmchaos")
	req.Header.Set("X-Prometheus-Remote-Write-Version", "0.1.0")
	resp, err := w.client.Do(req)
	if err != nil {
		return err // network errors are retryable
	}
	defer func() { _ = resp.Body.Close() }()
	msg, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20)) // let the connection be reused
	if resp.StatusCode/100 != 2 {
		return &HTTPError{Status: resp.StatusCode, Body: strings.TrimSpace(string(msg))}
	}
	return nil
}

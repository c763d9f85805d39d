package experiments

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/llmchaos/llmchaos/experiments/shardjob"
	"github.com/llmchaos/llmchaos/faults"
	"github.com/llmchaos/llmchaos/internal/kube"
	"github.com/llmchaos/llmchaos/internal/kube/api/corev1"
	"github.com/llmchaos/llmchaos/report"
)

// ShardRunner runs the load of an experiment with workload.shards N as N
// `llmchaos load --shard INDEX/N` processes started at one wall-clock
// instant, while the runner runs the fault timeline; at the end the runner
// reads every shard's per-request lines back and records them on its own
// clock, tagged by phase and fault from each one's send time.
//
// Each shard runs `llmchaos load` with the runner's flags plus --shard
// INDEX/N, --start-at, --out - (its JSON report on stdout) and
// --save-requests - (its request lines on stdout, all before the report):
// shardjob.Config.Args with SaveRequests. A shard flushes its request
// lines at least every shardjob.FlushEvery, so that the runner sees them
// while the load runs (stop conditions, live recovery, progress).
//
// When ctx ends, a ShardRunner asks every shard to stop as Ctrl-C does
// (its requests in flight end as interrupted results and it writes its
// report), and Collect returns what they wrote.
type ShardRunner interface {
	// Start starts n shards of `llmchaos load` with args (the load's
	// flags, without --shard, --start-at, --out, --progress or
	// --save-requests) that all start their schedule at startAt. It
	// returns once they are on their way, not when they end. What would
	// outlive a killed runner (a Job) is recorded in jr, the run's
	// journal, before it is created, and its entry closed once it is
	// gone, by the time Collect returns. lines, when not nil, is called
	// with every line a shard writes to its output as soon as it has it
	// (in order for one shard, concurrently for several); line is only
	// valid during the call.
	Start(ctx context.Context, jr *faults.Journal, args []string, n int, startAt time.Time, lines LineFunc) error
	// Collect waits until every shard has ended and returns what each
	// wrote, by index; an error when any shard has no report.
	Collect(ctx context.Context) ([]ShardOutput, error)
}

// LineFunc receives one line (without its newline) of a shard's output.
type LineFunc = shardjob.LineFunc

// ShardOutput is what one shard wrote.
type ShardOutput struct {
	// Index is the shard's index, from 0.
	Index int
	// Doc is its JSON run report.
	Doc *report.Document
	// Log holds its request lines (recording.ReadRequests), taken out of
	// the frames of its output and verified (shardjob.ParseShardLog).
	Log []byte
}

// shardConfig is the shardjob configuration of n shards of args at startAt,
// their request lines on stdout.
func shardConfig(args []string, n int, startAt time.Time) shardjob.Config {
	return shardjob.Config{Shards: n, StartAt: startAt, LoadArgs: args, SaveRequests: true}
}

// LocalShards runs the shards as child processes of the llmchaos
// executable Binary, on this machine: what each pod of the Kubernetes Job
// runs, its index expanded. The experiment runner uses it for
// workload.shards when Options.Shards is set to one (tests, a single big
// machine); each shard's stderr is kept apart and quoted when it fails.
// When the context of Start ends, each shard gets SIGINT (it stops as on
// Ctrl-C and writes its report) and, StopGrace later, SIGKILL.
type LocalShards struct {
	// Binary is the llmchaos executable.
	Binary string
	// StopGrace is how long a shard told to stop has to write its
	// report before it is killed (default DefaultShardStopGrace).
	StopGrace time.Duration

	mu      sync.Mutex
	n       int
	wg      sync.WaitGroup
	outs    []*shardjob.LineLog
	errs    []bytes.Buffer
	waits   []error
	ended   []chan struct{} // closed once shard i's process has ended
	entries []*faults.Entry // shard i's journal entry (nil without a journal)
	procs   []*os.Process
}

// DefaultShardStopGrace is LocalShards' default StopGrace.
const DefaultShardStopGrace = 30 * time.Second

var _ ShardRunner = (*LocalShards)(nil)

// Start implements ShardRunner. The shards are child processes of the
// runner, stopped when ctx ends, each in a process group of its own that
// is killed when the runner dies (a parent-death signal, on Linux), and
// each recorded in jr (a faults.KindProcess entry, closed once it has
// exited), so that the guard or `llmchaos recover` ends one that outlived
// a killed runner.
func (l *LocalShards) Start(ctx context.Context, jr *faults.Journal, args []string, n int, startAt time.Time, lines LineFunc) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.Binary == "" {
		return errors.New("local shards: no llmchaos executable to run them with")
	}
	if l.n != 0 {
		return errors.New("local shards: started twice")
	}
	cfg := shardConfig(args, n, startAt)
	l.n, l.outs, l.errs, l.waits, l.ended = n, make([]*shardjob.LineLog, n), make([]bytes.Buffer, n), make([]error, n), make([]chan struct{}, n)
	l.entries = make([]*faults.Entry, n)
	l.procs = make([]*os.Process, n)
	grace := cmp.Or(l.StopGrace, DefaultShardStopGrace)
	for i := range n {
		l.outs[i] = &shardjob.LineLog{Shard: i, Fn: lines}
		l.ended[i] = make(chan struct{})
		a := slices.Clone(cfg.Args())
		for k := range a {
			a[k] = strings.ReplaceAll(a[k], "$("+shardjob.IndexEnv+")", strconv.Itoa(i))
		}
		cmd := exec.CommandContext(ctx, l.Binary, a...)
		cmd.Stdout, cmd.Stderr = l.outs[i], &l.errs[i]
		cmd.Cancel = func() error { return cmd.Process.Signal(os.Interrupt) }
		cmd.WaitDelay = grace
		setShardAttrs(cmd)
		var entry *faults.Entry
		if jr != nil {
			var err error
			if entry, err = jr.Begin(fmt.Sprintf("shard %d", i), "load.shard", "a local load shard process"); err != nil {
				return fmt.Errorf("local shards: %w", err)
			}
		}
		if err := startHelper(cmd, l.ended[i], &l.waits[i]); err != nil {
			if entry != nil {
				_ = entry.Failed(err)
			}
			return fmt.Errorf("local shards: start shard %d (%s): %w", i, l.Binary, err)
		}
		l.procs[i] = cmd.Process
		if entry != nil {
			spec, err := faults.ProcessRevertSpec(cmd.Process.Pid, fmt.Sprintf("llmchaos load shard %d", i))
			if err == nil {
				err = entry.Will(spec)
			}
			if err == nil {
				err = entry.Injected()
			}
			if err != nil && !errors.Is(err, faults.ErrJournalClosed) {
				// An exited shard is not running: nothing to record.
				if _, alive, _ := faults.ProcessStartTime(cmd.Process.Pid); alive {
					return fmt.Errorf("local shards: journal shard %d: %w", i, err)
				}
			}
			l.entries[i] = entry
		}
		l.wg.Go(func() {
			<-l.ended[i]
			if entry != nil {
				_ = entry.Reverted(nil) // it has exited
			}
		})
	}
	return nil
}

// Collect implements ShardRunner.
func (l *LocalShards) Collect(ctx context.Context) ([]ShardOutput, error) {
	done := make(chan struct{})
	go func() { l.wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
		<-done // CommandContext stops them
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	outs := make([]ShardOutput, l.n)
	var errs []error
	for i := range l.n {
		outs[i].Index = i
		doc, reqs, err := shardjob.ParseShardLog(l.outs[i].Bytes())
		if err != nil {
			errs = append(errs, fmt.Errorf("shard %d: %v: %w\n%s", i, l.waits[i], err, strings.TrimSpace(l.errs[i].String())))
			continue
		}
		outs[i].Doc, outs[i].Log = doc, reqs
	}
	if len(errs) > 0 {
		return outs, fmt.Errorf("local shards: %w", &shardjob.LostError{Lost: len(errs), Shards: l.n, Err: errors.Join(errs...)})
	}
	return outs, nil
}

// KubernetesShards runs the shards as the pods of an Indexed Job
// (experiments/shardjob) in the target's namespace, and reads each one's
// report and request lines from its pod's log. The runner uses it for
// workload.shards with a target.kubernetes when Options.Shards is nil.
type KubernetesShards struct {
	// Cluster and Namespace are where the Job runs; Access is how the
	// journal's revert reaches Cluster again after a crash (the target's
	// kubeconfig and context).
	Cluster   *kube.Cluster
	Access    kube.Access
	Namespace string
	// Image is the llmchaos image the shard pods run.
	Image string
	// RunID labels the Job; ServiceAccount runs its pods ("" for the
	// namespace's default).
	RunID          string
	ServiceAccount string
	// Env is added to the load container (the API key from a Secret).
	Env []corev1.EnvVar
	// Logs reads the pods' logs (nil: through the API server).
	Logs shardjob.LogSource
	// Keep leaves the Job (and its pods' logs) once it has been read,
	// until its TTL; by default it is deleted.
	Keep bool

	done chan struct{}
	res  *shardjob.Result
	err  error
}

var _ ShardRunner = (*KubernetesShards)(nil)

// Job returns the Job Start creates for args, n and startAt.
func (k *KubernetesShards) Job(args []string, n int, startAt time.Time) shardjob.Config {
	cfg := shardConfig(args, n, startAt)
	cfg.Access, cfg.Namespace, cfg.Image, cfg.RunID, cfg.ServiceAccount = k.Access, k.Namespace, k.Image, k.RunID, k.ServiceAccount
	cfg.Name = "llmchaos-load-" + kube.Token()
	cfg.Keep = k.Keep
	cfg.Env = k.Env
	return cfg
}

// Start implements ShardRunner: it records the Job in jr (shardjob.KindJob,
// so that the guard or `llmchaos recover` deletes it if the runner is
// killed), creates it and returns; the Job is watched until it finished
// in the background, then deleted, unless Keep, and its journal entry
// closed.
func (k *KubernetesShards) Start(ctx context.Context, jr *faults.Journal, args []string, n int, startAt time.Time, lines LineFunc) error {
	if k.done != nil {
		return errors.New("kubernetes shards: started twice")
	}
	cfg := k.Job(args, n, startAt)
	cfg.Journal = jr
	if err := cfg.Validate(); err != nil {
		return fmt.Errorf("kubernetes shards: %w", err)
	}
	cfg.Lines = lines
	logs := k.Logs
	if logs == nil {
		logs = shardjob.PodLogs{Client: k.Cluster.Client}
	}
	k.done = make(chan struct{})
	created := make(chan struct{})
	go func() {
		defer close(k.done)
		k.res, k.err = shardjob.Run(ctx, k.Cluster, cfg, logs, func(string, time.Time) { close(created) })
	}()
	select {
	case <-created:
		return nil
	case <-k.done:
		return k.err
	}
}

// Collect implements ShardRunner.
func (k *KubernetesShards) Collect(ctx context.Context) ([]ShardOutput, error) {
	if k.done == nil {
		return nil, errors.New("kubernetes shards: not started")
	}
	select {
	case <-k.done:
	case <-ctx.Done():
		<-k.done // Run ends with ctx
	}
	if k.res == nil || k.res.Shards == nil {
		return nil, k.err
	}
	// Stopped (ctx ended): the shards that reported, and why the others
	// did not.
	outs := make([]ShardOutput, len(k.res.Shards))
	for i, s := range k.res.Shards {
		outs[i] = ShardOutput{Index: s.Index, Doc: s.Doc, Log: s.Log}
	}
	return outs, k.err
}

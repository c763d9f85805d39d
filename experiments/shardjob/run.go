package shardjob

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/llmchaos/llmchaos/faults"
	"github.com/llmchaos/llmchaos/internal/kube"
	"github.com/llmchaos/llmchaos/internal/kube/api/batchv1"
	"github.com/llmchaos/llmchaos/internal/kube/api/corev1"
	"github.com/llmchaos/llmchaos/internal/kube/api/fields"
	"github.com/llmchaos/llmchaos/internal/kube/api/metav1"
	"github.com/llmchaos/llmchaos/internal/kube/api/watch"
	"github.com/llmchaos/llmchaos/report"
)

// StopGrace is how long Run waits, once ctx ended, for the followed logs
// of the shards it stopped (their pods deleted: each load gets SIGTERM,
// stops as on Ctrl-C and writes its report within the pod's grace
// period, 30 s by default), and, after the Job finished, for the last
// lines of the logs it follows.
const StopGrace = 45 * time.Second

// Shard is what became of one shard.
type Shard struct {
	// Index is the shard's completion index.
	Index int
	// Pod is the pod that ran it ("" when none succeeded).
	Pod string
	// Doc is its report (nil when it has none).
	Doc *report.Document
	// Err says why it has no report.
	Err error
	// Log holds its request lines, kept with Config.SaveRequests (see
	// recording.ReadRequests), verified and taken out of its pod's log's
	// frames (ParseShardLog).
	Log []byte
}

// Result is a finished sharded load.
type Result struct {
	// Job is the Job's name; StartAt the instant the shards started at.
	Job     string
	StartAt time.Time
	// Shards are the shards by index.
	Shards []Shard
	// Merged is the merged report of the shards that have one.
	Merged *report.Document
	// Warnings are the merge's (an incomplete set with Partial, shards
	// whose recorded configurations differ).
	Warnings []string
}

// Started is called once the Job exists, with its name and start instant.
type Started func(job string, startAt time.Time)

// Run creates the Indexed Job of cfg, waits until it has finished, reads
// every shard's report from its pod's log through logs, checks that they
// are the shards of one load and merges them. At the end it deletes the
// Job and its pods and waits until they are gone, also when it fails or
// ctx ends, unless cfg.Keep and the Job has finished; a deletion that
// fails is an error that says how to delete the Job by hand. With
// cfg.Journal the Job is in the run's journal from before its creation
// until then. A shard without a report fails Run (naming it and quoting
// its log) unless cfg.Partial, where the others are merged with a
// warning.
func Run(ctx context.Context, cl *kube.Cluster, cfg Config, logs LogSource, started Started) (res *Result, err error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("shard job: %w", err)
	}
	cfg = cfg.withDefaults(time.Now())
	ref := JobRef{Access: cfg.Access, Namespace: cfg.Namespace, Name: cfg.Name}
	entry, err := begin(cfg.Journal, ref)
	if err != nil {
		return nil, fmt.Errorf("shard job: %w", err)
	}
	job, err := cl.Client.BatchV1().Jobs(cfg.Namespace).Create(ctx, cfg.Job(), metav1.CreateOptions{FieldManager: kube.ManagedBy})
	if err != nil {
		return nil, createFailed(ctx, cl, ref, entry, err)
	}
	finished := false
	defer func() {
		err = errors.Join(err, end(ctx, cl, ref, entry, cfg.Keep && finished))
	}()
	if entry != nil {
		if err := entry.Injected(); err != nil {
			return nil, fmt.Errorf("shard job: %w", err)
		}
	}
	if started != nil {
		started(job.Name, cfg.StartAt)
	}
	res = &Result{Job: job.Name, StartAt: cfg.StartAt}
	var fl *following
	if f, ok := logs.(Follower); ok {
		// The streams outlive ctx: a stopped shard's last lines and
		// report come after it. Followed whether or not the lines are
		// wanted: a shard whose pod is deleted (SIGTERM, the grace)
		// writes its report of what it sent, and its log goes with the
		// pod, before the Job has finished.
		fctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
		defer cancel()
		fl = follow(fctx, cl.Client, job, cfg.Shards, f, cfg.Lines)
	}
	created := job
	if job, err = waitFinished(ctx, cl.Client, job); err != nil {
		err = fmt.Errorf("shard job %s/%s: %w", cfg.Namespace, cfg.Name, err)
		if fl != nil && ctx.Err() != nil {
			res.Shards = stopFollowed(context.WithoutCancel(ctx), cl.Client, created, cfg.Shards, fl, cfg.SaveRequests)
			if merr := res.merge(true); merr != nil {
				err = errors.Join(err, merr)
			}
		}
		return res, err
	}
	if fl != nil {
		wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), StopGrace)
		fl.wait(wctx)
		cancel()
	}
	finished = true
	pods, err := shardPods(ctx, cl.Client, job)
	if err != nil {
		return res, fmt.Errorf("shard job %s/%s: %w", cfg.Namespace, cfg.Name, err)
	}
	res.Shards = collect(ctx, cfg.Shards, pods, logs, fl, cfg.SaveRequests)
	if err := res.merge(cfg.Partial); err != nil {
		return res, fmt.Errorf("shard job %s/%s: %w", cfg.Namespace, cfg.Name, err)
	}
	return res, nil
}

// begin records the Job of ref in j before it is created and returns its
// entry (nil without a journal).
func begin(j *faults.Journal, ref JobRef) (*faults.Entry, error) {
	if j == nil {
		return nil, nil
	}
	e, err := j.Begin(journalName, JournalType, ref.String())
	if err != nil {
		return nil, err
	}
	if err := e.Will(ref.Spec()); err != nil {
		// Nothing was created: the entry is closed.
		return nil, errors.Join(err, e.Failed(err))
	}
	return e, nil
}

// createFailed returns the error of a create of the Job of ref that
// failed with err, and closes its journal entry. A create the API server
// refused made nothing; after any other failure (ctx ended, the
// connection was lost) the Job may exist all the same, and is deleted.
func createFailed(ctx context.Context, cl *kube.Cluster, ref JobRef, entry *faults.Entry, err error) error {
	err = fmt.Errorf("shard job: create Job %s/%s: %w", ref.Namespace, ref.Name, err)
	if refused(err) {
		if entry != nil {
			return errors.Join(err, entry.Failed(err))
		}
		return err
	}
	dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), DeleteTimeout)
	defer cancel()
	derr := ref.Delete(dctx, cl)
	if entry != nil {
		derr = errors.Join(derr, entry.Reverted(derr))
	}
	if derr != nil {
		return errors.Join(err, fmt.Errorf("shard job: %w", derr))
	}
	return err
}

// end deletes the Job of ref at the end of Run unless keep (Config.Keep
// and the Job has finished: it sends nothing any more), and closes its
// journal entry: reverted when the Job is gone or kept, still pending
// (for `llmchaos recover`) when the deletion failed.
func end(ctx context.Context, cl *kube.Cluster, ref JobRef, entry *faults.Entry, keep bool) error {
	var err error
	if !keep {
		// Nothing of the load is lost with it: the reports are read (or
		// will never be). A Job left behind (the run was cut short before
		// its start instant, say) would still send its load.
		dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), DeleteTimeout)
		defer cancel()
		if err = ref.Delete(dctx, cl); err != nil {
			err = fmt.Errorf("shard job: %w", err)
		}
	}
	if entry != nil {
		err = errors.Join(err, entry.Reverted(err))
	}
	return err
}

// waitFinished watches job until it has finished (its Complete or Failed
// condition is true) and returns it as it is then.
func waitFinished(ctx context.Context, client *kube.Clientset, job *batchv1.Job) (*batchv1.Job, error) {
	jobs := client.BatchV1().Jobs(job.Namespace)
	for {
		if finished(job) {
			return job, nil
		}
		w, err := jobs.Watch(ctx, metav1.ListOptions{
			FieldSelector:   fields.OneTermEqualSelector("metadata.name", job.Name).String(),
			ResourceVersion: job.ResourceVersion,
		})
		if err != nil {
			return nil, fmt.Errorf("watch: %w", err)
		}
		job, err = untilFinished(ctx, w, job)
		w.Stop()
		if err != nil {
			return nil, err
		}
		if !finished(job) {
			// The watch ended (a server timeout): look again.
			if job, err = jobs.Get(ctx, job.Name, metav1.GetOptions{}); err != nil {
				return nil, fmt.Errorf("get: %w", err)
			}
		}
	}
}

// untilFinished reads w until job has finished, the watch ends, or ctx
// does; it returns the last state of job seen.
func untilFinished(ctx context.Context, w watch.Interface, job *batchv1.Job) (*batchv1.Job, error) {
	for {
		select {
		case <-ctx.Done():
			return job, fmt.Errorf("not finished (%d succeeded, %d failed, %d active): %w",
				job.Status.Succeeded, job.Status.Failed, job.Status.Active, context.Cause(ctx))
		case ev, ok := <-w.ResultChan():
			if !ok {
				return job, nil
			}
			switch ev.Type {
			case watch.Deleted:
				return job, errors.New("deleted before it finished")
			case watch.Error:
				return job, nil
			}
			if j, ok := ev.Object.(*batchv1.Job); ok {
				job = j
				if finished(job) {
					return job, nil
				}
			}
		}
	}
}

func finished(job *batchv1.Job) bool {
	for _, c := range job.Status.Conditions {
		if (c.Type == batchv1.JobComplete || c.Type == batchv1.JobFailed) && c.Status == corev1.ConditionTrue {
			return true
		}
	}
	return false
}

// shardPods lists the pods of job.
func shardPods(ctx context.Context, client *kube.Clientset, job *batchv1.Job) ([]corev1.Pod, error) {
	list, err := client.CoreV1().Pods(job.Namespace).List(ctx, metav1.ListOptions{
		LabelSelector: batchv1.ControllerUidLabel + "=" + string(job.UID),
	})
	if err != nil {
		return nil, fmt.Errorf("list its pods: %w", err)
	}
	return list.Items, nil
}

// stopFollowed stops the shards of job once ctx ended: it deletes the
// Job's pods (each load gets SIGTERM, stops as on Ctrl-C and writes its
// report), waits up to StopGrace for their followed logs to end, and
// returns the shards whose followed logs hold a report.
func stopFollowed(ctx context.Context, client *kube.Clientset, job *batchv1.Job, n int, fl *following, keep bool) []Shard {
	ctx, cancel := context.WithTimeout(ctx, StopGrace)
	defer cancel()
	bg := metav1.DeletePropagationBackground
	// Its error is Run's end's to report: that deletes the Job again (a
	// Job already gone counts as deleted) and waits until it is gone.
	_ = client.BatchV1().Jobs(job.Namespace).Delete(ctx, job.Name, metav1.DeleteOptions{PropagationPolicy: &bg})
	fl.wait(ctx)
	shards := make([]Shard, n)
	for i := range shards {
		shards[i].Index = i
		pod, b, ok := fl.log(i)
		shards[i].Pod = pod
		if !ok {
			shards[i].Err = errors.New("its log was not followed to its end")
			continue
		}
		fromLog(&shards[i], b, keep)
	}
	return shards
}

// fromLog sets s's report (and request lines, with keep) from its pod's
// log b.
func fromLog(s *Shard, b []byte, keep bool) {
	doc, reqs, err := ParseShardLog(b)
	if err != nil {
		s.Err = fmt.Errorf("pod %s: %w", s.Pod, err)
		return
	}
	s.Doc = doc
	if keep {
		s.Log = reqs
	}
}

// LostError is the error of a sharded load some of whose shards handed
// back no report (or one not whole): they are lost, counted
// (report.Document.ShardsLost), and the others merged.
type LostError struct {
	Lost, Shards int
	Err          error // why each one is lost
}

func (e *LostError) Error() string {
	return fmt.Sprintf("%d of %d shards lost (no report, or one not whole, in their output; the others are merged): %v", e.Lost, e.Shards, e.Err)
}

func (e *LostError) Unwrap() error { return e.Err }

// collect reads the report of every shard 0..n-1 from the log of its pod
// that succeeded (what fl followed of it when it followed it to its end,
// else read now), reading the logs at once; keep keeps the logs.
func collect(ctx context.Context, n int, pods []corev1.Pod, logs LogSource, fl *following, keep bool) []Shard {
	shards := make([]Shard, n)
	byIndex := map[int]*corev1.Pod{}
	failed := map[int]*corev1.Pod{}
	for i := range pods {
		p := &pods[i]
		idx, err := strconv.Atoi(p.Annotations[indexAnnotation])
		if err != nil || idx < 0 || idx >= n {
			continue
		}
		if p.Status.Phase == corev1.PodSucceeded {
			byIndex[idx] = p
		} else {
			failed[idx] = p
		}
	}
	var wg sync.WaitGroup
	for i := range shards {
		shards[i].Index = i
		p, ok := byIndex[i]
		if !ok {
			// A shard stopped before its end (its pod deleted: SIGTERM,
			// the grace) writes its report of what it sent; the pod is
			// gone or failed, but what was followed of its log to its end
			// holds that report, framed, when it is whole.
			if pod, b, ok := fl.followed(i); ok && pod != "" {
				s := Shard{Index: i, Pod: pod}
				if fromLog(&s, b, keep); s.Err == nil {
					shards[i] = s
					continue
				}
			}
			shards[i].Err = noSuccess(failed[i])
			continue
		}
		shards[i].Pod = p.Name
		if fl != nil {
			if pod, b, ok := fl.log(i); ok && pod == p.Name {
				fromLog(&shards[i], b, keep)
				continue
			}
		}
		wg.Go(func() {
			b, err := logs.Log(ctx, p)
			if err != nil {
				shards[i].Err = err
				return
			}
			fromLog(&shards[i], b, keep)
		})
	}
	wg.Wait()
	return shards
}

// noSuccess says why a shard has no pod that succeeded.
func noSuccess(p *corev1.Pod) error {
	if p == nil {
		return errors.New("no pod ran it")
	}
	msg := fmt.Sprintf("pod %s %s", p.Name, p.Status.Phase)
	for _, cs := range p.Status.ContainerStatuses {
		if t := cs.State.Terminated; t != nil {
			msg += fmt.Sprintf(": exit %d %s", t.ExitCode, t.Reason)
			if m := strings.TrimSpace(t.Message); m != "" {
				msg += ": " + m
			}
		}
	}
	return errors.New(msg)
}

// merge checks and merges the reports of the shards.
func (r *Result) merge(partial bool) error {
	var (
		names []string
		docs  []*report.Document
		errs  []error
	)
	for _, s := range r.Shards {
		if s.Doc == nil {
			errs = append(errs, fmt.Errorf("shard %d: %w", s.Index, s.Err))
			continue
		}
		names = append(names, fmt.Sprintf("shard %d (pod %s)", s.Index, s.Pod))
		docs = append(docs, s.Doc)
	}
	if len(docs) == 0 {
		return &LostError{Lost: len(errs), Shards: len(r.Shards), Err: errors.Join(errs...)}
	}
	// The shards that reported are merged whatever became of the others,
	// which are counted as lost: an error unless partial.
	for _, e := range errs {
		r.Warnings = append(r.Warnings, e.Error())
	}
	warns, err := report.CheckShards(names, docs, partial || len(errs) > 0)
	if err != nil {
		return fmt.Errorf("the reports are not the shards of one load: %w", err)
	}
	r.Warnings = append(r.Warnings, warns...)
	m, err := report.Merge(docs...)
	if err != nil {
		return fmt.Errorf("merge %d shards: %w", len(docs), err)
	}
	m.ShardsLost = len(errs)
	r.Merged = m
	slices.Sort(r.Warnings)
	if len(errs) > 0 && !partial {
		return &LostError{Lost: len(errs), Shards: len(r.Shards), Err: errors.Join(errs...)}
	}
	return nil
}

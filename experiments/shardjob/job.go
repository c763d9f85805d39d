package shardjob

import (
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/llmchaos/llmchaos/faults"
	"github.com/llmchaos/llmchaos/internal/kube"
	"github.com/llmchaos/llmchaos/internal/kube/api/batchv1"
	"github.com/llmchaos/llmchaos/internal/kube/api/corev1"
	"github.com/llmchaos/llmchaos/internal/kube/api/metav1"
)

// Container is the name of the load container in each shard's pod.
const Container = "load"

// IndexEnv is the variable the Job controller sets to a pod's completion
// index; the container's args refer to it as $(IndexEnv), which the
// kubelet expands.
const IndexEnv = "JOB_COMPLETION_INDEX"

// indexAnnotation is the annotation that holds a pod's completion index.
// FlushEvery is how often a shard (llmchaos load --save-requests -)
// writes out its request lines while it runs, so that the runner sees
// them live.
const FlushEvery = 250 * time.Millisecond

const indexAnnotation = batchv1.JobCompletionIndexAnnotation

// DefaultStartIn is how far ahead of the Job's creation the shards start
// when Config.StartAt is zero: time for N pods to be scheduled, pull the
// image and run the pre-flight check.
const DefaultStartIn = 30 * time.Second

// DefaultTTL is how long a finished Job (and its pods, with their logs)
// stays when it is kept.
const DefaultTTL = time.Hour

// Config is one sharded load.
type Config struct {
	// Access reaches the cluster.
	Access kube.Access
	// Namespace is where the Job runs.
	Namespace string
	// Name is the Job's name ("" for llmchaos-load-RANDOM).
	Name string
	// Image is the llmchaos image the shards run.
	Image string
	// Shards is the number of pods, N.
	Shards int
	// StartAt is the instant every shard starts its schedule at (zero:
	// DefaultStartIn from now).
	StartAt time.Time
	// LoadArgs are the flags of `llmchaos load` every shard gets, such
	// as --target, --model, --rate, --duration and --seed (one is drawn
	// when they have none). --shard, --start-at, --out and --progress
	// are set here and must not be in them.
	LoadArgs []string
	// RunID labels the Job (llmchaos.io/run).
	RunID string
	// ServiceAccount runs the shard pods ("" for the namespace's default).
	// Shards that follow a Kubernetes target's pods (FollowsPods) need one
	// that may make PodAPICalls, such as deploy/kubernetes's
	// DefaultPodServiceAccount.
	ServiceAccount string
	// Env is added to the load container (an API key from a Secret).
	Env []corev1.EnvVar
	// Resources of the load container.
	Resources corev1.ResourceRequirements
	// TTL is the Job's ttlSecondsAfterFinished (0: DefaultTTL).
	TTL time.Duration
	// Keep leaves the finished Job, its pods and their logs (until its
	// TTL) after its reports are collected; by default Run deletes it. A
	// Job that has not finished when Run ends (ctx ended first) is deleted
	// all the same: left, it would go on sending a load nobody reads.
	Keep bool
	// Journal, when set, is the write-ahead journal of the run the load
	// is part of: Run records the Job in it (KindJob, a JobRef through
	// Access) before creating it and closes the entry once the Job is
	// deleted (or, kept, has finished), so that the guard or `llmchaos
	// recover` deletes a Job whose run was killed. Nil (`llmchaos
	// shard-job`, which has no run directory): not recorded.
	Journal *faults.Journal
	// SaveRequests makes every shard write its per-request lines
	// (--save-requests -) to stdout before its report, and Run keep each
	// shard's log (Shard.Log) for them to be read back with
	// recording.ReadRequests (lenient: the log's other lines skipped).
	SaveRequests bool
	// Partial merges the shards that succeeded when some did not (with a
	// warning) instead of failing.
	Partial bool
	// Lines, when not nil and the LogSource is also a Follower, gets
	// every line of every shard's log while the Job runs: Run follows
	// each shard's pod log from its start, and reads the reports from
	// what it followed.
	Lines LineFunc
}

// reservedFlags are the flags of `llmchaos load` the Job sets itself.
var reservedFlags = []string{"--shard", "--start-at", "--out", "--framed", "--progress", "--html", "--save-requests"}

// Problems reports every problem with c, each message starting with the
// field (as a flag of `llmchaos shard-job`) it is about.
func (c Config) Problems() []error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if c.Namespace == "" {
		bad("namespace: required")
	}
	if c.Image == "" {
		bad("image: required: the llmchaos image the shard pods run")
	}
	if c.Shards < 1 {
		bad("shards: %d, want 1 or more", c.Shards)
	}
	for _, a := range c.LoadArgs {
		name, _, _ := strings.Cut(a, "=")
		if slices.Contains(reservedFlags, name) {
			bad("load flags: %s is set by the Job itself (each shard gets --shard INDEX/N, one --start-at, --out -); remove it", name)
		}
	}
	if c.TTL < 0 {
		bad("ttl: %s must not be negative", c.TTL)
	}
	return errs
}

// withDefaults returns c with the Job's name, start instant, TTL and seed
// chosen where c leaves them out; now is the current time.
func (c Config) withDefaults(now time.Time) Config {
	if c.Name == "" {
		c.Name = "llmchaos-load-" + kube.Token()
	}
	if c.StartAt.IsZero() {
		c.StartAt = now.Add(DefaultStartIn)
	}
	if c.TTL == 0 {
		c.TTL = DefaultTTL
	}
	if !hasFlag(c.LoadArgs, "--seed") {
		// Every shard must draw the same schedule: one seed for all.
		var b [8]byte
		_, _ = rand.Read(b[:]) // never fails
		seed := int64(binary.LittleEndian.Uint64(b[:]) >> 1)
		c.LoadArgs = append(slices.Clone(c.LoadArgs), "--seed", strconv.FormatInt(seed, 10))
	}
	return c
}

// FollowsPods reports whether the shards follow the pods of a Kubernetes
// target (their load flags have --kubernetes-selector or
// --kubernetes-service): their pods then carry their service account's
// token, and that account must make PodAPICalls.
func (c Config) FollowsPods() bool {
	return hasFlag(c.LoadArgs, "--kubernetes-selector") || hasFlag(c.LoadArgs, "--kubernetes-service")
}

func hasFlag(args []string, flag string) bool {
	return slices.ContainsFunc(args, func(a string) bool { return a == flag || strings.HasPrefix(a, flag+"=") })
}

// Args returns the load container's args for c: `load`, c's flags, and
// --shard $(JOB_COMPLETION_INDEX)/N, --start-at, --out - --framed (the
// JSON report on stdout, in frames that survive the log's interleaving of
// stdout and stderr: see FrameMarker), --progress 0 (no live lines in the
// log) and, with
// SaveRequests, --save-requests - (one JSON line per request on stdout,
// all written before the report).
func (c Config) Args() []string {
	args := append([]string{"load"}, c.LoadArgs...)
	args = append(args,
		"--shard", fmt.Sprintf("$(%s)/%d", IndexEnv, c.Shards),
		"--start-at", c.StartAt.UTC().Format(time.RFC3339Nano),
		"--out", "-",
		"--framed",
		"--progress", "0")
	if c.SaveRequests {
		args = append(args, "--save-requests", "-")
	}
	return args
}

// Job returns the Indexed Job of c (defaults filled in by the caller):
// Shards completions, all running at once, each pod once (a shard that
// fails is not started again: its start instant has passed), labelled
// with the run.
func (c Config) Job() *batchv1.Job {
	n := int32(c.Shards)
	mode := batchv1.IndexedCompletion
	zero := int32(0)
	ttl := int32(c.TTL / time.Second)
	no, yes := false, true
	// Only shards that follow the target's pods talk to the API server.
	token := c.FollowsPods()
	uid := int64(65532)
	labels := kube.OwnedLabels(c.RunID, "load")
	labels["app.kubernetes.io/name"] = "llmchaos-load"
	return &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: c.Name, Namespace: c.Namespace, Labels: labels},
		Spec: batchv1.JobSpec{
			CompletionMode: &mode,
			Completions:    &n,
			Parallelism:    &n,
			// One try per index; the other shards go on when one fails.
			BackoffLimitPerIndex:    &zero,
			TTLSecondsAfterFinished: &ttl,
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					RestartPolicy:                corev1.RestartPolicyNever,
					ServiceAccountName:           c.ServiceAccount,
					AutomountServiceAccountToken: &token,
					EnableServiceLinks:           &no,
					SecurityContext:              &corev1.PodSecurityContext{RunAsNonRoot: &yes, RunAsUser: &uid, SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault}},
					Containers: []corev1.Container{{
						Name:  Container,
						Image: c.Image,
						Args:  c.Args(),
						Env: append([]corev1.EnvVar{{
							// The Job controller sets it too; naming it here
							// makes the args' $(JOB_COMPLETION_INDEX) plain.
							Name:      IndexEnv,
							ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.annotations['" + indexAnnotation + "']"}},
						}}, c.Env...),
						Resources:                c.Resources,
						TerminationMessagePolicy: corev1.TerminationMessageFallbackToLogsOnError,
						SecurityContext: &corev1.SecurityContext{
							AllowPrivilegeEscalation: &no, ReadOnlyRootFilesystem: &yes,
							Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
						},
					}},
				},
			},
		},
	}
}

// Validate returns Problems joined.
func (c Config) Validate() error { return errors.Join(c.Problems()...) }

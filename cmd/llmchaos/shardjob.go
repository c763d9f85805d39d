package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/llmchaos/llmchaos/experiments/shardjob"
	"github.com/llmchaos/llmchaos/internal/exitcode"
	"github.com/llmchaos/llmchaos/internal/kube"
	"github.com/llmchaos/llmchaos/internal/kube/api/corev1"
	"github.com/llmchaos/llmchaos/xk6-llm/client"
)

// shardJobOptions is `llmchaos shard-job`'s configuration.
type shardJobOptions struct {
	Access         kube.Access
	Namespace      string
	Name           string
	Image          string
	Shards         int
	StartIn        time.Duration
	ServiceAccount string
	APIKeySecret   string // NAME/KEY of a Secret holding the API key
	Keep, Partial  bool
	Output         string
	Thresholds     []string
	LoadArgs       []string
}

func newShardJobCmd() *cobra.Command {
	var o shardJobOptions
	cmd := &cobra.Command{
		Use:   "shard-job --namespace NS --image IMAGE --shards N -- LOAD FLAGS...",
		Short: "Run a load as a Kubernetes Indexed Job of N shards and merge their reports",
		Long: `shard-job runs ` + "`llmchaos load`" + ` in N pods at once: an Indexed Job of N
completions, all running together, each pod given the load flags after --
plus --shard $(JOB_COMPLETION_INDEX)/N and one --start-at instant (--start-in
from now: time for the pods to be scheduled and pull the image). Every shard
draws the whole seeded schedule and sends its part of it, so that together
they send exactly what one process would (the flags must carry --seed, or one
is drawn for all). Each shard writes its JSON report to its log (--out -);
once the Job has finished, shard-job reads the reports from the pods' logs,
checks that they are the shards of one load and merges them, as
` + "`llmchaos merge`" + ` does, and deletes the Job and its pods, waiting until they
are gone (--keep leaves the finished Job, for a while: its
ttlSecondsAfterFinished is an hour). A Job cut short (Ctrl-C) is deleted all
the same; one whose deletion fails is named, with the kubectl command that
deletes it. shard-job has no run directory: its Job is not in a journal, so
if shard-job itself is killed, delete the Job by hand (kubectl -n NS delete
job NAME; its name is printed when it is created).

The load flags are checked here first. File flags (--dataset, --trace) name
files inside the pods (an image that has them, or a volume). --api-key-secret
NAME/KEY gives the pods the API key from a Secret, as ` + client.DefaultAPIKeyEnv + `.

With --kubernetes-selector or --kubernetes-service among the load flags,
each shard follows the target's ready pods itself while it runs (a pod
replaced meanwhile gets its share of the requests): the shard pods then run
with their service account's token, and --service-account must name one
that may list and watch pods and EndpointSlices in the namespace
(deploy/kubernetes's ` + shardjob.DefaultPodServiceAccount + `).

The service account that runs shard-job needs, in the namespace: jobs
create, get, watch, delete; pods list; pods/log get; serviceaccounts get
with --service-account (deploy/kubernetes's Role grants them).

Exit codes: 0 merged (with --threshold: every threshold held); 99 with
--threshold, a threshold failed; 98 with --threshold, a shard had been
aborted; 2 bad flags; 1 anything else (a shard without a report, unless
--partial).`,
		Example: `  llmchaos shard-job -n llm --image registry.example/llmchaos:v1 --shards 4 -o all.json -- \
    --target http://vllm.llm.svc:8000/v1 --model meta-llama/Llama-3.1-8B-Instruct --workload chat \
    --rate 400 --duration 5m --seed 7`,
		Args: usageArgs(cobra.ArbitraryArgs),
		RunE: func(cmd *cobra.Command, args []string) error {
			if i := cmd.ArgsLenAtDash(); i < 0 && len(args) > 0 {
				return usageError(fmt.Errorf("unexpected arguments %q: the load flags go after --", args))
			}
			o.LoadArgs = args
			return runShardJob(cmd.Context(), o, cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&o.Access.Kubeconfig, "kubeconfig", "", "kubeconfig file (default: $KUBECONFIG, ~/.kube/config, or the pod's service account in a cluster)")
	fs.StringVar(&o.Access.Context, "context", "", "kubeconfig context (default: its current one)")
	fs.StringVarP(&o.Namespace, "namespace", "n", "", "namespace of the Job (required)")
	fs.StringVar(&o.Name, "name", "", "name of the Job (default: llmchaos-load-RANDOM)")
	fs.StringVar(&o.Image, "image", "", "llmchaos image the shard pods run (required)")
	fs.IntVar(&o.Shards, "shards", 0, "number of shards, N: pods that run at once (required)")
	fs.DurationVar(&o.StartIn, "start-in", shardjob.DefaultStartIn, "how long after the Job's creation the shards start together")
	fs.StringVar(&o.ServiceAccount, "service-account", "", "service account of the shard pods (default: the namespace's default); shards given --kubernetes-selector or --kubernetes-service need one that may list and watch pods and EndpointSlices, such as deploy/kubernetes's "+shardjob.DefaultPodServiceAccount)
	fs.StringVar(&o.APIKeySecret, "api-key-secret", "", "NAME/KEY of a Secret in the namespace whose value the shards send as the API key")
	fs.BoolVar(&o.Keep, "keep", false, "leave the finished Job and its pods (for an hour) instead of deleting them (a Job cut short is deleted all the same)")
	fs.BoolVar(&o.Partial, "partial", false, "merge the shards that have a report when some do not (a warning instead of an error)")
	fs.StringVarP(&o.Output, "output", "o", "", "write the merged JSON report to this file (atomically); stdout when empty or -")
	addThresholdFlag(fs, &o.Thresholds)
	return cmd
}

// config checks o and returns the Job's configuration.
func (o shardJobOptions) config() (shardjob.Config, error) {
	cfg := shardjob.Config{
		Access: o.Access, Namespace: o.Namespace, Name: o.Name, Image: o.Image, Shards: o.Shards,
		LoadArgs: o.LoadArgs, ServiceAccount: o.ServiceAccount, Keep: o.Keep, Partial: o.Partial,
	}
	errs := cfg.Problems()
	if o.StartIn <= 0 {
		errs = append(errs, fmt.Errorf("--start-in %s: must be more than 0", o.StartIn))
	}
	if o.APIKeySecret != "" {
		name, key, ok := strings.Cut(o.APIKeySecret, "/")
		if !ok || name == "" || key == "" {
			errs = append(errs, fmt.Errorf("--api-key-secret %q: want NAME/KEY", o.APIKeySecret))
		} else {
			env := client.DefaultAPIKeyEnv
			cfg.Env = []corev1.EnvVar{{Name: env, ValueFrom: &corev1.EnvVarSource{
				SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: name}, Key: key},
			}}}
		}
	}
	if cfg.Shards >= 1 && len(errs) == 0 {
		if err := checkShardLoadFlags(cfg.LoadArgs, cfg.Shards); err != nil {
			errs = append(errs, err)
		}
	}
	return cfg, errors.Join(errs...)
}

// checkShardLoadFlags checks the load flags as `llmchaos load` will in the
// first shard's pod.
func checkShardLoadFlags(args []string, shards int) error {
	f := defaultLoadFlags()
	fs := pflag.NewFlagSet("load", pflag.ContinueOnError)
	fs.SetOutput(io.Discard)
	addLoadFlags(fs, &f)
	if err := fs.Parse(append(slices.Clone(args), "--shard", fmt.Sprintf("0/%d", shards))); err != nil {
		return fmt.Errorf("load flags: %w", err)
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("load flags: unexpected arguments %q", fs.Args())
	}
	if _, err := f.config(fs); err != nil {
		return fmt.Errorf("load flags: %w", err)
	}
	return nil
}

// runShardJob runs the sharded load and writes the merged report.
func runShardJob(ctx context.Context, o shardJobOptions, stdout, stderr io.Writer) error {
	ths, err := parseThresholds(o.Thresholds)
	if err != nil {
		return err
	}
	cfg, err := o.config()
	if err != nil {
		return usageError(err)
	}
	cfg.StartAt = time.Now().Add(o.StartIn)
	cl, err := o.Access.Connect()
	if err != nil {
		return err
	}
	if cfg.ServiceAccount != "" {
		if err := shardjob.CheckServiceAccount(ctx, cl.Client, cfg.Namespace, cfg.ServiceAccount); err != nil {
			return usageError(err)
		}
	}
	res, err := shardjob.Run(ctx, cl, cfg, shardjob.PodLogs{Client: cl.Client}, func(job string, at time.Time) {
		fmt.Fprintf(stderr, "llmchaos shard-job: Job %s/%s: %d shards start at %s\n", cfg.Namespace, job, cfg.Shards, at.UTC().Format(time.RFC3339Nano))
	})
	lost, _ := errors.AsType[*shardjob.LostError](err)
	if err != nil && (lost == nil || res == nil || res.Merged == nil) {
		return err
	}
	for _, w := range res.Warnings {
		fmt.Fprintf(stderr, "llmchaos shard-job: warning: %s\n", w)
	}
	m := res.Merged
	m.ToolVersion = toolVersion()
	if len(o.Thresholds) > 0 {
		m.Evaluate(ths, m.Aborted())
	}
	if err := writeReport(stdout, o.Output, formatJSON, m); err != nil {
		return err
	}
	if lost != nil {
		// The others are merged and written; the run still failed.
		return withCode(exitcode.Internal, err)
	}
	if len(o.Thresholds) > 0 {
		return verdictError(m)
	}
	return nil
}

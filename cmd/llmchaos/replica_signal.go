package main

import (
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/llmchaos/llmchaos/faults/replica"
)

// replicaSignalOptions are `llmchaos replica-signal`'s flags.
type replicaSignalOptions struct {
	PodUID     string
	Containers []string
	Signal     string
	Proc       string
	Within     time.Duration
}

// newReplicaSignalCmd is the hidden command that replica.kill's pod runs
// on a target pod's node (hostPID, CAP_KILL): it sends the signal to every
// process of the pod's containers, found through /proc by their cgroup.
func newReplicaSignalCmd() *cobra.Command {
	o := replicaSignalOptions{Signal: "SIGKILL", Proc: "/proc", Within: 2 * time.Second}
	cmd := &cobra.Command{
		Use:    "replica-signal --pod-uid UID --container ID [--container ID...]",
		Short:  "signal the processes of a pod's containers on this node (replica.kill's helper pod)",
		Hidden: true,
		Args:   usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runReplicaSignal(o, cmd.OutOrStdout())
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&o.PodUID, "pod-uid", "", "uid of the pod")
	fs.StringSliceVar(&o.Containers, "container", nil, "id of a container of the pod (containerd://ID or ID); repeat for each")
	fs.StringVar(&o.Signal, "signal", o.Signal, "signal to send")
	fs.StringVar(&o.Proc, "proc", o.Proc, "the host's /proc (the pod runs with hostPID)")
	fs.DurationVar(&o.Within, "within", o.Within, "how long to look for processes forked after the first were signalled")
	return cmd
}

func runReplicaSignal(o replicaSignalOptions, stdout io.Writer) error {
	if o.PodUID == "" || len(o.Containers) == 0 {
		return usageError(errors.New("replica-signal: --pod-uid and --container are required"))
	}
	sig, err := replica.ParseSignal(o.Signal)
	if err != nil {
		return usageError(fmt.Errorf("replica-signal: --signal: %w", err))
	}
	ids := make([]string, len(o.Containers))
	for i, c := range o.Containers {
		ids[i] = replica.ContainerID(c)
	}
	pids, err := replica.SignalContainers(o.Proc, o.PodUID, ids, func(pid int) error { return replica.SignalPID(pid, sig) }, o.Within)
	if err != nil {
		return fmt.Errorf("replica-signal: %w", err)
	}
	fmt.Fprintf(stdout, "replica-signal: sent %s to %d process(es) of pod %s: pids %s\n", replica.SignalName(sig), len(pids), o.PodUID, strings.Trim(fmt.Sprint(pids), "[]"))
	return nil
}

// Package replica holds the replica fault family: kill, stop, freeze or
// restart some of a service's serving replicas, and watch what the replicas
// do next, so that recovery is measured from the service itself.
//
// # Faults
//
// replica.kill (a signal, SIGKILL by default), replica.stop (SIGTERM, a
// grace period, SIGKILL), replica.pause (SIGSTOP or docker pause; Undo
// resumes) and replica.restart. Each takes Params: a target (which replicas
// match) and a selection (how many of those that are up it acts on: one,
// all, count or percent, with a min_available floor, picked with the run's
// seeded *rand.Rand; see faults.Selection). The picked replicas are acted on
// at the same moment.
//
// Before each change a fault records in the journal how to revert it:
// KindSignalCont (pid and start time) before a SIGSTOP, KindDockerUnpause
// (the container id) before a docker pause, so that `llmchaos recover`
// resumes a replica that a crashed run left frozen. Kill, stop and restart
// record KindDockerStart (a container: the revert has it running again,
// starting it when the engine leaves it stopped) or KindAwaitBack (a
// process, which llmchaos cannot start: the revert waits for its supervisor
// to have it up again, and fails, saying so, when nobody does). Nothing is
// reported reverted that is left as the fault made it. Reverters returns
// the reverters of these kinds.
//
// # Drivers
//
// A Driver lists targets and applies an action to one (Driver.Targets,
// Driver.Apply); each lives in its own file.
//
//   - process: local processes from the simulator supervisor's state file,
//     a pid file, or a pattern matched against the executable's name (or,
//     with match: cmdline, the whole command line); Preview lists what a
//     target matches, for a dry run. A process is named by its pid
//     and its start time and signalled through a pidfd after the start time
//     is checked, so a reused pid is never signalled; llmchaos's own process
//     and its ancestors are refused.
//   - docker: containers through the Docker Engine API (the engine found as
//     the docker CLI finds it, the API version negotiated), by label or by
//     name, and only containers that opt in with the label
//     llmchaos.io/target=true. A kill signals the container's main process
//     from the host by default, so that Docker sees a crash and applies its
//     restart policy (`docker kill` through the engine counts as a
//     deliberate stop, which restart policies ignore).
//   - kubernetes: pods of a label selector in a namespace, through the
//     Kubernetes API (the cluster of a kubeconfig and context, or the
//     pod's service account in a cluster), and only pods that opt in with
//     the label llmchaos.io/target=true on the pod or its namespace, owned
//     by a controller that replaces them. Kill deletes a pod with grace 0,
//     stop with the grace period, restart is a rollout restart of its
//     Deployment, StatefulSet or DaemonSet; the revert (KindPodAwaitReady,
//     KindRolloutAwait) waits until the controller has as many pods Ready
//     as before, or the rollout complete.
//
// # Events
//
// A Watcher reports Events ({at, replica, kind, detail}: exit, start,
// restart, healthy, ...) for the `events` of run.json: the process driver by
// reading the supervisor's state file, or the processes of a pid file or a
// pattern, every WatchInterval (a process that takes the place of one that
// exited is the same replica: by port, parent or order; its first answer to
// GET /health is reported as healthy), the docker driver from the engine's
// event stream (die, start, health_status, ...), the kubernetes driver from
// a watch of the pods (created, scheduled, start, healthy, restart, oom,
// crashloop, terminating, deleted) and of the control plane's Events of
// them and their controllers (reported under their reason).
package replica

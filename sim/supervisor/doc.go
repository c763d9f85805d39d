// Package supervisor runs simulated replicas as child processes and restarts
// them as an orchestrator would (DESIGN §5): replica i listens on BasePort+i
// (with base port 0, on a port the system picks: the supervisor binds it and
// hands the listening socket to the child, so no port is probed and released),
// a replica that exits is started again after a restart delay, its progress
// (starting → serving → exited → restarting → starting ...) is written to a
// JSON state file (package simcontract/replicastate, which publishes the
// ports) on every change, and every child is stopped (SIGTERM, a
// grace period, SIGKILL) when the supervisor's context ends.
//
// Children die with the supervisor even when it is killed with SIGKILL: each
// is started with the parent-death signal SIGKILL from a goroutine that holds
// its OS thread for the whole life of the replica (the signal follows the
// thread that forked, not the process; Go issue 27505).
//
// WatchParent gives a process a context that ends when its own parent exits;
// the GPU balloon uses it to release its memory when whoever started it dies.
//
// The command a replica runs is a parameter (Options.Command), so the logic is
// tested with any small child program.
package supervisor

// Package replicastate is the format of the replica state file that the
// simulator's supervisor (`llmchaos sim --replicas N --state-file F`) keeps
// and the chaos side reads: a JSON list of Replica, one per replica, with
// its index, pid, port, virtual GPU, state (starting → serving → exited →
// restarting → starting ...), restart count and last exit.
//
// The file is rewritten whole on every change (Write renames a temporary
// file over it), so a reader never sees half a file. When the supervisor
// runs with base port 0 the system picks each replica's port and Port is
// the only place where it is published.
package replicastate

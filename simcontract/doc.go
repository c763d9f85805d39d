// Package simcontract holds, in its sub-packages, the contract between the
// simulator (sim/...) and the chaos side (faults/..., experiments): the
// formats and settings both sides read or write, with no simulator code.
//
//   - replicastate: the supervisor's replica state file (pids, ports,
//     states, restarts).
//   - vgpu: the virtual GPU memory ledger shared by replicas and balloons
//     through a directory (reservations keyed by pid, read, write, locking),
//     byte sizes, and the Balloon that holds memory on behalf of a fault.
//   - simconfig: one simulated replica's configuration as `llmchaos sim`
//     takes it in flags, its defaults and its validation.
//
// The simulator keeps its implementation in sim/... and imports these
// packages; the chaos side imports these and never sim/..., so a tool meant
// for real vLLM does not depend on its test server. A test of this module
// fails if a non-test file outside sim/ and cmd/ imports sim/....
package simcontract

// Package engine runs a load: it turns a workload's arrival schedule into
// requests sent on time (open loop, through a Pacer that sleeps to absolute
// times on the run clock) or keeps virtual users busy (closed loop), hands
// each request to the client and every Result to the recorder, and ends the
// run with its RunStats. Exactly one Result is recorded per scheduled
// request; one the engine could not start in time is a dropped Result.
package engine

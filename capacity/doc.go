// Package capacity finds the most load a service holds within its SLO:
// the highest arrival rate (or concurrency) at which every threshold
// given holds, with its uncertainty, so that chaos runs at a known share
// of it.
//
// The search (Next, a pure function of the steps so far) ramps the load
// exponentially until a passing load and a failing one bracket the knee,
// then bisects the bracket until its width is within the precision asked;
// Run drives it with one load per step through the load pipeline
// (pipeline/load), each step a warm-up that is discarded and a
// measurement long enough for the percentile asked (StepRequests), with a
// settle gap between steps. A step the client could not drive (it sent
// fewer requests than scheduled, its send lag or dropped arrivals rose,
// or its machine's CPU was near 100 %) is client-limited: the result then
// says that the client, not the server, was the limit.
//
// The result is the capacity file (File: JSON, versioned), which keeps
// every step's measurements; WriteText, WriteHTML write the terminal
// table and the HTML page. Apply sets an experiment's rate given as a
// percentage (workload: {rate: 80%, capacity: capacity.json}) from a
// capacity file.
package capacity

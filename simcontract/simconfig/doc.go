// Package simconfig is one simulated replica's configuration, as the
// simulator's engine runs it and as `llmchaos sim` takes it in flags: the
// model, latency model, scheduler limits, GPU memory model and seed, with
// the defaults of a Llama-3-8B replica on one H200 (Default) and a
// Validate that reports every problem at once.
//
// The chaos side uses it to fill an experiment's target.sim defaults, to
// check them before anything starts and to build the flags of the
// simulator it runs; the engine (package sim) aliases Config as sim.Config.
package simconfig

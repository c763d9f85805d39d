// Package workload says what the load engine sends and when. Arrival
// schedules are pure functions of the seed and the configuration
// (ArrivalConfig: constant, Poisson or gamma rates, stages, ramps, replayed
// traces) giving absolute send times. A Workload draws a Session for each
// arrival from synthetic prompts (PromptBuilder), a dataset (JSONL,
// ShareGPT) or a trace's lengths, with length distributions (Dist) and
// named presets; BuildRequest turns one of its turns into the Request the
// client sends.
//
// Resolve is the one workload resolver of every front end (an
// experiment's workload: mapping, llmchaos load's flags, whose text it
// parses through Given.Set): preset, settings on top, defaults, checks,
// every problem keyed by its field.
//
// It imports nothing else of the load engine.
package workload

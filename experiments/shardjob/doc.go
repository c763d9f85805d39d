// Package shardjob runs the load of `llmchaos load` split over N pods: a
// Kubernetes Indexed Job of N completions, all N at once, each pod running
// `llmchaos load --shard $(JOB_COMPLETION_INDEX)/N --start-at T` with the
// same flags and seed, so that the shards start at one wall-clock instant
// and together send exactly the single-process schedule. Each shard writes
// its JSON report to its standard output (--out -); once the Job has
// finished, the reports are read from the pods' logs, checked to be the
// shards of one load and merged with report.Merge, as `llmchaos merge`
// does.
//
// Logs are read through LogSource, a narrow interface (PodLogs reads
// pods/log), so that collection is tested on clusters whose pods have no
// logs (kwok's). APICalls lists the API calls the package makes, for the
// RBAC of deploy/kubernetes.
//
// A run's Job is in the run's write-ahead journal (Config.Journal) from
// before its creation until it is deleted: its RevertSpec (KindJob, a
// JobRef) names the Job and how to reach its cluster, and the reverter
// of Reverters, which experiments/spec.Reverters merges for `llmchaos
// recover` and the guard, deletes it and its pods after a crash.
package shardjob

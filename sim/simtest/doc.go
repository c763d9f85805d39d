// Package simtest holds the simulator's tests with real processes: the
// llmchaos binary is built once (static, as `make build` makes it) and run as
// replicas, supervisors and GPU balloons sharing a vGPU ledger directory, and
// as a container of the deploy/Dockerfile image when a Docker engine answers.
// It has no code of its own.
package simtest

// Package testutil holds the helpers that the end-to-end tests of llmchaos
// share: building the llmchaos binary once per test binary (in TestMain),
// becoming a child subreaper so that orphaned descendants can be reaped,
// polling for a condition with a deadline, finding free ports on 127.0.0.1,
// running child processes with their output captured, probing /health and
// streaming a completion from a simulator replica.
//
// Every wait is bounded by a limit and polls every PollInterval; nothing here
// sleeps to pace a test. The package keeps no state of its own: a test
// package's TestMain holds what it needs (the directory of the binary).
//
// It is for tests only, and imports only the standard library and
// golang.org/x/sys/unix.
package testutil

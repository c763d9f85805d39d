package main

// Exit codes of a k6-style script run (`llmchaos run FILE.js`): k6's own
// (its errext/exitcodes), so that a CI gate written for `k6 run` reads the
// same outcome. A failed threshold is ExitThresholds (99) as everywhere;
// bad flags are still ExitUsage (2), and a pre-flight check the server
// refused too (k6 has none).
const (
	// ExitScriptSetupTimeout means setup() did not end within
	// setupTimeout.
	ExitScriptSetupTimeout = 100
	// ExitScriptTeardownTimeout means teardown() did not end within
	// teardownTimeout.
	ExitScriptTeardownTimeout = 101
	// ExitScriptInvalidConfig means the script's options are not valid: a
	// scenario, a threshold (or a --threshold), a metric a threshold names
	// that no one registers.
	ExitScriptInvalidConfig = 104
	// ExitScriptExternalAbort means a signal (Ctrl-C, SIGTERM, SIGHUP,
	// SIGQUIT) aborted the run; its report is written.
	ExitScriptExternalAbort = 105
	// ExitScriptException means the script threw outside an iteration (in
	// its init code, setup() or teardown()), or does not load (a syntax
	// error, an unknown import).
	ExitScriptException = 107
	// ExitScriptAborted means the script called exec.test.abort().
	ExitScriptAborted = 108
	// ExitScriptMarkedFailed means the script called exec.test.fail(): the
	// run went on to its end and failed; it wins over failed thresholds,
	// as in k6.
	ExitScriptMarkedFailed = 110
)

// scriptExitCodes lists the script-only exit codes, in increasing order.
var scriptExitCodes = []int{ExitScriptSetupTimeout, ExitScriptTeardownTimeout, ExitScriptInvalidConfig,
	ExitScriptExternalAbort, ExitScriptException, ExitScriptAborted, ExitScriptMarkedFailed}

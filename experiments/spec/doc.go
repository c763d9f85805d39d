// Package spec owns the experiment file: its types (Spec and its parts),
// the strict loader that reports every problem with its file:line:col
// (Load, Parse), the semantic checks (Spec.Validate), the defaults
// (Spec.WithDefaults, a separate step: validation never fills anything),
// the JSON Schema generated from the types for editors (GenerateSchema,
// committed as schema/experiment.schema.json) and the fault reference
// (FaultTypes, WriteFaultTypes, FaultReference). It reads and checks
// specs without running anything: package experiments runs them, and any
// other tool that needs a spec (a suite runner, a console) imports this
// package alone.
//
// An experiment file says what to load, which faults to inject when, what
// "healthy" means and what must hold:
//
//	apiVersion: llmchaos/v1
//	kind: Experiment
//	metadata: {name: quickstart}
//	target:
//	  sim: {replicas: 3}
//	workload: {preset: chat, rate: 20, duration: 60s}
//	steady_state:
//	  - http: {url: "{{target}}/health", expect_status: 200}
//	  - threshold: "error_rate: rate<0.01"
//	faults:
//	  - {name: slow-net, type: network.latency, at: 15s, duration: 15s, params: {latency: 200ms}}
//	stop_conditions: ["error_rate: rate<0.5"]
//	thresholds:
//	  "recovery_time{fault:slow-net}": ["max<20s"]
//
// Keys are snake_case, except k6's own names inside threshold entries
// (abortOnFail, delayAbortEval) and apiVersion. Durations are Go's
// ("200ms", "15s", "1m30s"); lengths and duration distributions use
// `llmchaos load`'s flag syntax ("lognormal:1020:0.8,max=6144"). JSON with
// the same keys is read as well (it is YAML).
//
// # Loading
//
// Decoding is strict: an unknown key is an error that names the nearest
// known key, a value of the wrong type is an error, a key given twice is an
// error, and all of them are reported at once, with every semantic problem
// found in the parts that did decode, as field.Problems (the one problem
// type of every front end) in file order. Each has the file, line and
// column (in characters, from 1), the key path (faults[1].params.latency)
// and a message saying what to do. A
// threshold's grammar error points at the offending character inside the
// string. Warnings (a fault whose recovery cannot be observed) do not make
// a file invalid.
//
// Fault types and their params are listed in one explicit map, FaultTypes;
// params decode strictly into the fault package's own params types.
//
// # Suites
//
// A suite file (kind: Suite, type Suite) lists experiment files to run one
// after another, with one target for all of them, overrides (Overrides:
// rate, duration, time_scale, thresholds, recovery, seed; `llmchaos run`
// applies its --duration and --rate through the same type), settle time,
// health timeout, continue_on_fail and tags. LoadSuite reads it with the
// same strict, positioned decoder; Suite.Resolve loads each experiment it
// lists, applies the suite to it and checks it again, reporting each
// problem in the file where it is written. Its schema is
// schema/suite.schema.json (GenerateSuiteSchema).
//
// # Editors
//
// Point yaml-language-server (VS Code's YAML extension, and others) at the
// schema with a first line in the experiment file:
//
//	# yaml-language-server: $schema=../spec/schema/experiment.schema.json
//
// (the path is relative to the file; that is the line of the files in
// experiments/catalog), or for every file under a folder in
// the editor's settings: "yaml.schemas": {"experiments/spec/schema/experiment.schema.json": "experiments/**/*.yaml"}.
// Regenerate the schema after changing the types with
// `go generate ./experiments/spec` (or go test ./experiments/spec -run TestSchema -update);
// a test fails while the committed schema is stale.
package spec

// Package docker is llmchaos's client of the Docker Engine API: the calls
// the docker replica driver makes (list, inspect, start, stop, kill, pause
// and unpause containers, and follow the engine's events), over HTTP on the
// engine's unix socket, a TCP address or TLS.
//
// The engine is found as the docker CLI finds it (OptionsFromEnv):
// DOCKER_HOST (unix:///var/run/docker.sock by default), DOCKER_CERT_PATH
// and DOCKER_TLS_VERIFY, DOCKER_API_VERSION. The API version is negotiated
// with the engine on the first call (the lower of the engine's and
// MaxAPIVersion; an engine older than MinAPIVersion is refused), unless
// DOCKER_API_VERSION pins one.
//
// It stands in for the moby client module, whose dependencies (its API
// types, OpenTelemetry's HTTP instrumentation) made up about a twentieth of
// the CPU time of llmchaos's first build for these eight calls
// (docs/development.md, Build time). Answers are decoded into the few
// fields llmchaos reads; an engine's error keeps its HTTP status (IsNotFound)
// and message.
package docker

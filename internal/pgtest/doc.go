// Package pgtest starts a real PostgreSQL server for tests (Debian's
// postgresql package, 15): a fresh cluster made by initdb in a temporary
// directory, listening on 127.0.0.1 on a free port with no Unix socket, and
// stopped (fast shutdown) when the test ends. initdb and postgres refuse
// to run as root, so under root the server runs as the unprivileged user
// nobody (65534). Tests skip, saying why, when the binaries are absent or
// cannot be run so, unless LLMCHAOS_REQUIRE_POSTGRES=1 (CI sets it), which
// makes that a failure.
package pgtest

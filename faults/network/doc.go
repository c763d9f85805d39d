// Package network holds the network fault family: a fault proxy with L4 and
// SSE-aware L7 toxics, and kernel-level faults (nftables loss and partition,
// tbf bandwidth, netem delay) for targets inside a network namespace.
//
// # The fault proxy
//
// A Proxy sits between the load and the target (it listens on 127.0.0.1:0
// or a given address and dials one upstream host:port). Toxics are added
// and removed while it runs, open connections included; each toxic fault
// (NewToxic and the typed constructors) adds its toxic on Inject and removes
// it on Undo. Every wait of a toxic also watches for the connection's end
// and for a change of the toxic set, as Toxiproxy's toxics watch their
// interrupt channel.
//
// L4 toxics act on the bytes of one direction, as Toxiproxy's do: upstream
// is client → target, downstream target → client. network.latency (with
// seeded jitter), network.throttle (bytes per second), network.slow_close,
// network.reset_peer, network.blackhole and network.limit_data.
//
// While no L4 toxic covers a direction, its bytes are written on by the
// goroutine that read them (a read and a write per chunk, nothing copied);
// otherwise they are stamped and queued for the toxics.
//
// In ModeHTTP the proxy also follows HTTP/1.1 (httpConn): each client
// connection gets its own upstream connection, and the bytes pass through as
// they came, read only far enough to know where each request and response
// begins and ends. A close, a reset or a refusal of the upstream reaches the
// client as one (a refusal makes the proxy refuse connections until the
// upstream listens again), and a request that a reused upstream connection
// lost before any byte of its response is sent once more on a fresh one, as
// the load client does. L7 toxics are decided PER REQUEST with a seeded
// *rand.Rand, so the requests of one keep-alive connection get independent
// fates (Toxiproxy decides per connection): http.error answers 429/500/503
// with an OpenAI error body and the header X-Llmchaos-Fault naming the
// toxic, http.ttfb delays the request, stream.stall pauses an SSE stream
// after N tokens, stream.cut closes it mid-body after N tokens, and
// stream.chunk_delay adds a delay before every chunk (a body a stream toxic
// acts on is decoded and coded again). Whether a toxic acts
// on a request is drawn once, when the request arrives; removing the toxic
// still ends its waits (a held first byte, a stall, chunk delays) and
// cancels its cut in requests already under way. A token is an SSE
// event whose data carries content, reasoning or a tool call (a role-only or
// usage-only chunk is not one), as the load engine counts them.
//
// The proxy runs in the runner's process (Listen, then Serve in a goroutine
// of the runner's errgroup) or as a child process (StartProxyProcess, which
// runs the hidden `llmchaos proxy` command). The child ends when its parent
// dies (its stdin closes, and a parent-death signal backs that up), and it is
// recorded in the journal as a faults.KindProcess spec before it takes its
// port, so that `llmchaos recover` can end it after the runner was killed.
// Its toxics are managed through a small HTTP API on a unix socket.
//
// # Kernel-level faults
//
// The Netns* faults act on a target inside a network namespace through
// nftables and netlink; their rules carry owned, named handles and are
// removed by Undo and by the reverters of KernelReverters.
package network

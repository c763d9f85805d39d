// Package observe starts and stops, as one piece, everything that watches a
// run from outside the load engine: the live Prometheus endpoint
// (--metrics-listen), remote write of the same series (--out
// prometheus-rw=URL), one OpenTelemetry span per request (--otlp-endpoint)
// and the server-side monitor that scrapes each target's /metrics into the
// run's document. `llmchaos load` and `llmchaos run` share it, so both get
// the same flags with the same behaviour.
//
// # Life of a run
//
//	obs, err := observe.Start(ctx, observe.Options{
//		MetricsListen:  "127.0.0.1:9464",          // "" : no endpoint
//		RemoteWriteURL: "http://prom:9090/api/v1/write",
//		OTLPEndpoint:   "http://collector:4318",
//		ScrapeTargets:  cfg.Targets,                // nil : no server monitor
//		Clock:          clock.Now, RunStart: clock.Start(),
//		InFlight:       func() int64 { return rec.Snapshot(clock.Now()).InFlight },
//		Warn:           func(err error) { fmt.Fprintln(stderr, "warning:", err) },
//	})
//	// print obs.MetricsURL() when it is not empty
//	eng, _ := engine.New(engine.Config{..., Observe: obs.Observe, ObserveEvents: obs.ObserveEvents})
//	// the runner: obs.FaultActive(name, type, true) after Inject and
//	// obs.FaultActive(name, type, false) after Undo
//	stats, _ := eng.Run(ctx)
//	doc.Server = obs.ServerSeries(stats.End)   // before the JSON and HTML are written
//	doc.Evaluate(thresholds, aborted)
//	obs.SetThresholds(doc.Thresholds)          // before Close: the last push carries them
//	err = obs.Close(ctx)                       // last remote write push, spans flushed
//
// Every part is optional: Start with a zero Options starts nothing, and the
// methods of the parts that are off do nothing, so callers need no
// conditions of their own.
//
// # Lifetime and errors
//
// The observers run from Start until Close, whatever happens to Start's
// context meanwhile (only its values are kept): an interrupted run still
// gets its last remote write push and its spans exported, and its report
// still gets the server series scraped so far. Close must be called once
// the run is over; it waits for every goroutine Start began.
//
// Problems that must not stop a load go to Options.Warn as they happen, at
// most once per cause: the first failed scrape of each target (a target
// without /metrics), the first failed remote write push. Close then returns
// what remains true at the end, joined: a *remotewrite.RunError when any
// push failed, the tracer's last export failure, a metrics server that did
// not stop cleanly. A failed scrape is not an error of Close: the document
// shows it (an "up" series at 0). A password in a URL given in Options is
// removed from every warning and error (errors.As still finds the
// libraries' typed errors beneath).
//
// # Server series
//
// ServerSeries folds the monitor's samples into report.SeriesRecord values
// under vLLM's names, as the JSON report's schema spells them, whichever
// engine served them (the scrape package's table maps SGLang's,
// llama.cpp's, TGI's and Triton TensorRT-LLM's series onto them):
//
//	vllm:kv_cache_usage_perc      unit ratio (0–1)
//	vllm:num_requests_running     unit count
//	vllm:num_requests_waiting     unit count
//	vllm:num_preemptions_total    unit count (a counter: the HTML report plots its rate)
//	vllm:prompt_tokens_total      unit count (a counter)
//	vllm:generation_tokens_total  unit count (a counter)
//	up                            1 scraped, 0 failed; kept only for a target whose scrape failed at least once
//
// Each series' Engine names the engine its target was last recognised as
// (empty for a target never scraped successfully). A target whose page has
// no series of a known engine gets one warning through Options.Warn.
//
// A series' endpoint is the target's base URL with any password replaced,
// and is left empty when the run has a single target.
//
// # Concurrency
//
// Observe, SetInFlight, FaultActive, ThresholdOK, SetThresholds,
// SetLiveThresholds, Samples and ServerSeries are safe for concurrent use
// and may be called after Close (they then change nothing anyone reads).
// Observe does not keep its Result, as engine.Config.Observe requires.
package observe

package llm_test

import (
	"slices"
	"testing"
	"time"

	"github.com/llmchaos/llmchaos/xk6-llm/workload"
)

// TestE2EShardsSendTheWholeSchedule runs a load whole and as three shards
// against real simulators (one after the other: each run has its own clock,
// and the schedule is on that clock): the shards together sent exactly the
// whole run's requests, each with the same sequence number, request id,
// scheduled time, endpoint and prompt, and each shard only its own.
func TestE2EShardsSendTheWholeSchedule(t *testing.T) {
	a, _ := startSim(t, simOpts{TTFT: 2 * time.Millisecond, ITL: time.Millisecond})
	b, _ := startSim(t, simOpts{TTFT: 2 * time.Millisecond, ITL: time.Millisecond})
	type key struct {
		seq       uint64
		id        string
		scheduled int64
		endpoint  string
		prompt    int
	}
	w := workload.Config{InputTokens: workload.UniformDist(10, 300), OutputTokens: workload.UniformDist(1, 4)}
	runKeys := func(shard workload.Shard) []key {
		r := e2e{targets: []string{a, b}, arrival: workload.ArrivalConfig{Rate: 300, Requests: 45}, workload: w,
			seed: 11, grace: 5 * time.Second, shard: shard}.run(t)
		req := r.sum.Requests()
		if uint64(req.OK) != r.stats.Scheduled || uint64(len(r.results)) != r.stats.Scheduled || req.Lost != 0 {
			t.Fatalf("shard %s: %d ok, %d saved of %d scheduled, %d lost (errors %v)", shard, req.OK, len(r.results), r.stats.Scheduled, req.Lost, req.ErrorsByClass)
		}
		var ks []key
		for _, s := range r.results {
			if !shard.Keeps(s.Seq) {
				t.Errorf("shard %s sent seq %d, another shard's", shard, s.Seq)
			}
			ks = append(ks, key{s.Seq, s.RequestID, s.ScheduledUs, s.Endpoint, s.PromptSent})
		}
		return ks
	}
	sortKeys := func(ks []key) { slices.SortFunc(ks, func(x, y key) int { return int(x.seq) - int(y.seq) }) }
	whole := runKeys(workload.Shard{})
	sortKeys(whole)
	if len(whole) != 45 {
		t.Fatalf("the whole run sent %d requests, want 45", len(whole))
	}
	var union []key
	for i := range 3 {
		part := runKeys(workload.Shard{Index: i, Count: 3})
		if len(part) != 15 {
			t.Errorf("shard %d/3 sent %d requests, want 15", i, len(part))
		}
		union = append(union, part...)
	}
	sortKeys(union)
	if !slices.Equal(union, whole) {
		t.Errorf("the shards' requests differ from the whole run's:\nshards: %v\nwhole:  %v", union, whole)
	}
}

// TestE2EClosedLoopShard: a closed-loop shard runs its own virtual users of
// the whole loop (users 1 and 4 of 5 for shard 1/3), started at their
// single-process ramp-up offsets, never more in flight than they are, and
// numbers its requests in its own residue class.
func TestE2EClosedLoopShard(t *testing.T) {
	if testing.Short() {
		t.Skip("real run of about a second")
	}
	url, _ := startSim(t, simOpts{TTFT: 10 * time.Millisecond, ITL: 2 * time.Millisecond})
	shard := workload.Shard{Index: 1, Count: 3}
	r := e2e{targets: []string{url}, arrival: workload.ArrivalConfig{Concurrency: 5, ThinkTime: workload.FixedDuration(30 * time.Millisecond), Duration: 600 * time.Millisecond},
		workload: shortChat(10), rampUp: 250 * time.Millisecond, grace: 5 * time.Second, shard: shard}.run(t)
	req := r.sum.Requests()
	if req.OK != req.Scheduled || req.OK < 4 || req.Lost != 0 {
		t.Fatalf("ok %d of %d scheduled, %d lost; want all, several (errors %v)", req.OK, req.Scheduled, req.Lost, req.ErrorsByClass)
	}
	if got := r.sum.Concurrency.Max; got > 2 {
		t.Errorf("in-flight max %d, want at most the shard's 2 users", got)
	}
	ends := map[int64]bool{}
	seqs := map[uint64]bool{}
	for _, s := range r.results {
		ends[s.EndUs] = true
		if !shard.Keeps(s.Seq) || seqs[s.Seq] {
			t.Errorf("seq %d repeated or not in shard %s's residue class", s.Seq, shard)
		}
		seqs[s.Seq] = true
	}
	var starts []int64
	for _, s := range r.results {
		if !ends[s.ScheduledUs-30_000] {
			starts = append(starts, s.ScheduledUs)
		}
	}
	slices.Sort(starts)
	// Users 1 and 4 of 5 over a 250 ms ramp-up start at 50 and 200 ms.
	if want := []int64{50_000, 200_000}; !slices.Equal(starts, want) {
		t.Errorf("the shard's users started at %v µs, want users 1 and 4 of 5 at %v", starts, want)
	}
}

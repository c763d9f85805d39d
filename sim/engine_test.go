package sim

import (
	"errors"
	"math"
	"reflect"
	"testing"
	"time"

	"github.com/llmchaos/llmchaos/internal/promexpo"
)

func constantConfig() Config {
	c := DefaultConfig()
	c.Latency = LatencyConstant
	c.TTFT = 50 * time.Millisecond
	c.ITL = 10 * time.Millisecond
	return c
}

func TestConstantExactTiming(t *testing.T) {
	e := newTestEngine(t, constantConfig())
	arrivals := []arrival{
		{at: 0, req: Request{PromptTokens: 100, MaxTokens: 5, IgnoreEOS: true}},
		{at: ms(3), req: Request{PromptTokens: 10, MaxTokens: 5, IgnoreEOS: true}},
		{at: ms(7.5), req: Request{PromptTokens: 3000, MaxTokens: 5, IgnoreEOS: true}},
	}
	tr := run(t, e, arrivals, time.Minute)
	for i, a := range arrivals {
		want := make([]time.Duration, 5)
		for k := range want {
			want[k] = a.at + 50*time.Millisecond + time.Duration(k)*10*time.Millisecond
		}
		if got := tr.times[i]; !reflect.DeepEqual(got, want) {
			t.Errorf("stream %d token times: got %v, want %v", i, got, want)
		}
		if got := tr.fins[i]; got != FinishLength {
			t.Errorf("stream %d finish: got %v, want length", i, got)
		}
	}
}

func TestTTFTGrowsWithQueueing(t *testing.T) {
	t.Run("constant", func(t *testing.T) {
		cfg := constantConfig()
		cfg.MaxNumSeqs = 2
		e := newTestEngine(t, cfg)
		var arrivals []arrival
		for range 5 {
			arrivals = append(arrivals, arrival{req: Request{PromptTokens: 20, MaxTokens: 3, IgnoreEOS: true}})
		}
		tr := run(t, e, arrivals, time.Minute)
		// Two run at once; each holds its slot for TTFT + 2 ITL = 70 ms.
		want := []time.Duration{ms(50), ms(50), ms(120), ms(120), ms(190)}
		for i := range arrivals {
			if got := tr.times[i][0]; got != want[i] {
				t.Errorf("stream %d TTFT: got %v, want %v", i, got, want[i])
			}
		}
	})
	t.Run("profile", func(t *testing.T) {
		cfg := DefaultConfig()
		cfg.MaxNumSeqs = 2
		e := newTestEngine(t, cfg)
		var arrivals []arrival
		for range 6 {
			arrivals = append(arrivals, arrival{req: Request{PromptTokens: 500, MaxTokens: 20, IgnoreEOS: true}})
		}
		tr := run(t, e, arrivals, time.Minute)
		for i := 2; i < len(arrivals); i += 2 {
			prev, got := tr.times[i-2][0], tr.times[i][0]
			// The next pair starts only after the previous pair has finished.
			if last := tr.times[i-2][19]; got <= last {
				t.Errorf("pair %d TTFT %v not after the previous pair's last token %v", i/2, got, last)
			}
			if got <= prev {
				t.Errorf("stream %d TTFT %v not larger than stream %d's %v", i, got, i-2, prev)
			}
		}
	})
}

func TestPreemptionWhenBlocksRunOut(t *testing.T) {
	for _, latency := range []string{LatencyProfile, LatencyConstant} {
		t.Run(latency, func(t *testing.T) {
			// 10 blocks = 160 tokens; four sequences grow to 64 tokens (4 blocks) each.
			cfg := smallConfig(latency, 10)
			cfg.MaxModelLen = 64
			reg := promexpo.NewRegistry(nil)
			e, err := NewEngine(cfg, NewLocalMemory(cfg.GPUMemory), WithRegistry(reg))
			if err != nil {
				t.Fatal(err)
			}
			var arrivals []arrival
			for range 4 {
				arrivals = append(arrivals, arrival{req: Request{PromptTokens: 16, MaxTokens: 48, IgnoreEOS: true}})
			}
			maxUsed := 0
			tr := &transcript{}
			for _, a := range arrivals {
				s, err := e.Submit(0, a.req)
				if err != nil {
					t.Fatal(err)
				}
				tr.add(s)
			}
			now := time.Duration(0)
			for guard := 0; ; guard++ {
				next, ok := e.Advance(now)
				tr.collect(now)
				maxUsed = max(maxUsed, e.Stats().UsedBlocks)
				if !ok {
					break
				}
				if guard > 100000 {
					t.Fatal("no progress")
				}
				now = next
			}
			st := e.Stats()
			if st.Preemptions == 0 {
				t.Errorf("preemptions: got 0, want > 0")
			}
			if got := e.m.preemptions.Value(); got != float64(st.Preemptions) {
				t.Errorf("vllm:num_preemptions_total: got %v, want %d", got, st.Preemptions)
			}
			if maxUsed > 10 {
				t.Errorf("blocks in use peaked at %d, more than the 10 that exist", maxUsed)
			}
			if st.UsedBlocks != 0 || st.Running != 0 || st.Waiting != 0 {
				t.Errorf("after the run: %+v, want nothing used", st)
			}
			for i := range arrivals {
				if got := len(tr.times[i]); got != 48 || tr.fins[i] != FinishLength {
					t.Errorf("stream %d: %d tokens, %v; want 48, length", i, got, tr.fins[i])
				}
			}
		})
	}
}

func TestQueueFull(t *testing.T) {
	for _, latency := range []string{LatencyProfile, LatencyConstant} {
		t.Run(latency, func(t *testing.T) {
			cfg := DefaultConfig()
			cfg.Latency = latency
			cfg.MaxNumSeqs = 1
			cfg.MaxWaiting = 2
			e := newTestEngine(t, cfg)
			req := Request{PromptTokens: 10, MaxTokens: 10, IgnoreEOS: true}
			for i := range 3 {
				if _, err := e.Submit(0, req); err != nil {
					t.Fatalf("submit %d: %v", i, err)
				}
			}
			if _, err := e.Submit(0, req); !errors.Is(err, ErrQueueFull) {
				t.Fatalf("4th submit: got %v, want ErrQueueFull", err)
			}
			if got := e.Stats(); got.Running != 1 || got.Waiting != 2 {
				t.Errorf("stats: got %d running %d waiting, want 1 and 2", got.Running, got.Waiting)
			}
		})
	}
}

func TestContextLength(t *testing.T) {
	cfg := constantConfig()
	cfg.MaxModelLen = 1024
	tests := []struct {
		name      string
		req       Request
		wantErr   bool
		wantMaxTo int
	}{
		{"fits exactly", Request{PromptTokens: 1000, MaxTokens: 24}, false, 24},
		{"one over", Request{PromptTokens: 1000, MaxTokens: 25}, true, 0},
		{"prompt alone too long", Request{PromptTokens: 1024}, true, 0},
		{"default max_tokens fills the window", Request{PromptTokens: 1000}, false, 24},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newTestEngine(t, cfg)
			s, err := e.Submit(0, tt.req)
			if tt.wantErr {
				if _, ok := errorsAs[*ContextLengthError](err); !ok {
					t.Fatalf("got %v, want *ContextLengthError", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := s.MaxTokens(); got != tt.wantMaxTo {
				t.Errorf("max tokens: got %d, want %d", got, tt.wantMaxTo)
			}
		})
	}
}

func TestBadRequests(t *testing.T) {
	tests := []struct {
		name string
		req  Request
	}{
		{"empty prompt", Request{PromptTokens: 0, MaxTokens: 5}},
		{"negative max", Request{PromptTokens: 5, MaxTokens: -1}},
		{"min over max", Request{PromptTokens: 5, MaxTokens: 5, MinTokens: 6}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newTestEngine(t, constantConfig())
			if _, err := e.Submit(0, tt.req); err == nil {
				t.Fatal("got nil error, want one")
			} else if _, ok := errorsAs[*InvalidRequestError](err); !ok {
				t.Fatalf("got %T %v, want *InvalidRequestError", err, err)
			}
		})
	}
}

func scenario() []arrival {
	var a []arrival
	for i := range 40 {
		a = append(a, arrival{at: time.Duration(i) * 7 * time.Millisecond, req: Request{PromptTokens: 50 + 37*i, MaxTokens: 200}})
	}
	return a
}

func TestDeterministicForASeed(t *testing.T) {
	for _, latency := range []string{LatencyProfile, LatencyConstant} {
		t.Run(latency, func(t *testing.T) {
			cfg := DefaultConfig()
			cfg.Latency = latency
			cfg.MaxNumSeqs = 8
			cfg.MeanOutputTokens = 30
			first := run(t, newTestEngine(t, cfg), scenario(), time.Hour)
			second := run(t, newTestEngine(t, cfg), scenario(), time.Hour)
			if !reflect.DeepEqual(first.times, second.times) || !reflect.DeepEqual(first.texts, second.texts) ||
				!reflect.DeepEqual(first.fins, second.fins) {
				t.Fatal("two runs with the same seed and arrivals differ")
			}
			lengths := map[int]bool{}
			for _, x := range first.texts {
				lengths[len(x)] = true
			}
			if len(lengths) < 5 {
				t.Errorf("output lengths barely vary (%d distinct); the length draw looks broken", len(lengths))
			}
			cfg.Seed++
			third := run(t, newTestEngine(t, cfg), scenario(), time.Hour)
			if reflect.DeepEqual(first.texts, third.texts) {
				t.Error("a different seed gave the same tokens")
			}
		})
	}
}

func TestPerRequestSeed(t *testing.T) {
	seed := int64(42)
	texts := func(engineSeed int64) []string {
		cfg := constantConfig()
		cfg.Seed = engineSeed
		tr := run(t, newTestEngine(t, cfg), []arrival{{req: Request{PromptTokens: 10, MaxTokens: 50, Seed: &seed}}}, time.Hour)
		return tr.texts[0]
	}
	a, b := texts(1), texts(2)
	if !reflect.DeepEqual(a, b) {
		t.Errorf("same request seed, different engine seeds: %q vs %q", a, b)
	}
}

func TestOutputLength(t *testing.T) {
	cfg := constantConfig()
	cfg.MeanOutputTokens = 40
	cfg.MaxNumSeqs = 1000
	cfg.MaxWaiting = 5000
	e := newTestEngine(t, cfg)
	tests := []struct {
		name string
		req  Request
		n    int
	}{
		{"ignore_eos gives max_tokens", Request{PromptTokens: 5, MaxTokens: 77, IgnoreEOS: true}, 50},
		{"capped by max_tokens", Request{PromptTokens: 5, MaxTokens: 10}, 300},
		{"min_tokens floor", Request{PromptTokens: 5, MaxTokens: 500, MinTokens: 60}, 300},
		{"distribution", Request{PromptTokens: 5, MaxTokens: 5000}, 3000},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sum := 0
			for range tt.n {
				s, err := e.Submit(0, tt.req)
				if err != nil {
					t.Fatal(err)
				}
				e.Cancel(0, s)
				switch {
				case tt.req.IgnoreEOS:
					if s.outLen != tt.req.MaxTokens || s.reason != FinishLength {
						t.Fatalf("got %d/%v, want %d/length", s.outLen, s.reason, tt.req.MaxTokens)
					}
				case s.outLen > tt.req.MaxTokens || s.outLen < max(1, tt.req.MinTokens):
					t.Fatalf("length %d outside [%d, %d]", s.outLen, tt.req.MinTokens, tt.req.MaxTokens)
				case (s.reason == FinishLength) != (s.outLen == tt.req.MaxTokens && s.reason == FinishLength):
					t.Fatalf("finish %v with length %d of max %d", s.reason, s.outLen, tt.req.MaxTokens)
				}
				sum += s.outLen
			}
			if tt.name == "distribution" {
				// Geometric with mean 40: the sample mean of 3000 draws is within 10%.
				if mean := float64(sum) / float64(tt.n); math.Abs(mean-40) > 4 {
					t.Errorf("mean length: got %.1f, want 40 ± 4", mean)
				}
			}
		})
	}
}

func TestCancelFreesBlocksAtOnce(t *testing.T) {
	for _, latency := range []string{LatencyProfile, LatencyConstant} {
		t.Run(latency, func(t *testing.T) {
			cfg := DefaultConfig()
			cfg.Latency = latency
			cfg.MaxNumSeqs = 1
			e := newTestEngine(t, cfg)
			a, err := e.Submit(0, Request{PromptTokens: 1000, MaxTokens: 100, IgnoreEOS: true})
			if err != nil {
				t.Fatal(err)
			}
			b, err := e.Submit(0, Request{PromptTokens: 10, MaxTokens: 10, IgnoreEOS: true})
			if err != nil {
				t.Fatal(err)
			}
			now := time.Duration(0)
			for n, _ := a.Progress(); n < 3; n, _ = a.Progress() {
				next, ok := e.Advance(now)
				if !ok {
					t.Fatal("engine idle before three tokens")
				}
				now = next
			}
			if got := e.Stats().UsedBlocks; got != 1000/16+1 {
				t.Fatalf("blocks before cancel: got %d, want %d", got, 1000/16+1)
			}
			e.Cancel(now, a)
			if _, fin := a.Progress(); fin != FinishCancelled {
				t.Errorf("finish after cancel: got %v, want abort", fin)
			}
			// The waiting one took the slot; the cancelled one's blocks are gone.
			st := e.Stats()
			if st.Running > 1 || st.UsedBlocks > 1 {
				t.Errorf("after cancel: %d running, %d blocks used; want at most b's 1 block", st.Running, st.UsedBlocks)
			}
			e.Cancel(now, b)
			if st := e.Stats(); st.UsedBlocks != 0 || st.Running != 0 || st.Waiting != 0 {
				t.Errorf("after both cancels: %+v", st)
			}
		})
	}
}

func TestOOMWhenActivationDoesNotFit(t *testing.T) {
	for _, latency := range []string{LatencyProfile, LatencyConstant} {
		t.Run(latency, func(t *testing.T) {
			cfg := DefaultConfig()
			cfg.Latency = latency
			mem := &fakeMemory{total: cfg.GPUMemory, free: cfg.GPUMemory}
			e, err := NewEngine(cfg, mem)
			if err != nil {
				t.Fatal(err)
			}
			reqs := make([]*Stream, 0, 4)
			for range 4 {
				s, err := e.Submit(0, Request{PromptTokens: 2000, MaxTokens: 1000, IgnoreEOS: true})
				if err != nil {
					t.Fatal(err)
				}
				reqs = append(reqs, s)
			}
			// A second of load with plenty of headroom: no death, and the
			// free figure is read about every 100 ms, not on every step.
			readsBefore := mem.reads
			now := time.Duration(0)
			for now < time.Second {
				next, ok := e.Advance(now)
				if !ok {
					t.Fatal("idle")
				}
				now = next
			}
			if e.Err() != nil {
				t.Fatalf("died with headroom: %v", e.Err())
			}
			if reads := mem.reads - readsBefore; reads < 2 || reads > 11 {
				t.Errorf("free memory read %d times in 1 s, want at most one per 100 ms and some", reads)
			}
			// A balloon takes the headroom: the next step cannot get its activations.
			mem.free = 1 << 20
			for e.Err() == nil {
				next, ok := e.Advance(now)
				if !ok {
					break
				}
				now = next
			}
			oom, ok := errorsAs[*OOMError](e.Err())
			if !ok {
				t.Fatalf("Err: got %v, want *OOMError", e.Err())
			}
			if oom.Free != 1<<20 || oom.Total != cfg.GPUMemory || oom.Need != int64(oom.Tokens)*cfg.ActivationBytesPerToken || oom.Need <= oom.Free {
				t.Errorf("OOM numbers: %+v", oom)
			}
			if now >= time.Second+freeRefresh {
				t.Errorf("death at %v, more than one refresh interval after the balloon", now)
			}
			for i, s := range reqs {
				if _, fin := s.Progress(); fin != FinishError || !errors.Is(s.Err(), ErrEngineDead) {
					t.Errorf("stream %d: finish %v err %v, want error wrapping ErrEngineDead", i, fin, s.Err())
				}
				if _, ok := errorsAs[*OOMError](s.Err()); !ok {
					t.Errorf("stream %d error %v does not wrap *OOMError", i, s.Err())
				}
			}
			if _, err := e.Submit(now, Request{PromptTokens: 1, MaxTokens: 1}); !errors.Is(err, ErrEngineDead) {
				t.Errorf("submit after death: got %v, want ErrEngineDead", err)
			}
		})
	}
}

func TestStartError(t *testing.T) {
	cfg := DefaultConfig()
	tests := []struct {
		name       string
		mem        *fakeMemory
		wantReason bool
	}{
		{"too little free", &fakeMemory{total: cfg.GPUMemory, free: 20 << 30}, false},
		{"device smaller than weights", &fakeMemory{total: 16 << 30, free: 16 << 30}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			freeBefore := tt.mem.free
			_, err := NewEngine(cfg, tt.mem)
			se, ok := errorsAs[*StartError](err)
			if !ok {
				t.Fatalf("got %v, want *StartError", err)
			}
			if got := se.Reason != ""; got != tt.wantReason {
				t.Errorf("reason set: got %v, want %v (%v)", got, tt.wantReason, se)
			}
			if !tt.wantReason && (se.Free != freeBefore || se.Total != tt.mem.total || se.Need <= se.Free) {
				t.Errorf("numbers: %+v", se)
			}
			if tt.mem.free != freeBefore {
				t.Errorf("memory left reserved after a failed start: free %d, was %d", tt.mem.free, freeBefore)
			}
		})
	}
}

func TestStartReservesWeightsAndPool(t *testing.T) {
	cfg := DefaultConfig()
	mem := NewLocalMemory(cfg.GPUMemory)
	e, err := NewEngine(cfg, mem)
	if err != nil {
		t.Fatal(err)
	}
	wantBlocks := (int64(float64(cfg.GPUMemory)*0.9) - cfg.WeightBytes) / (131072 * 16)
	if got := e.Stats().TotalBlocks; int64(got) != wantBlocks {
		t.Errorf("blocks: got %d, want %d", got, wantBlocks)
	}
	free, _ := mem.Free()
	if want := cfg.GPUMemory - cfg.WeightBytes - wantBlocks*131072*16; free != want {
		t.Errorf("free after start: got %d, want %d (≈ 10%% of the device)", free, want)
	}
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	if free, _ := mem.Free(); free != cfg.GPUMemory {
		t.Errorf("free after Close: got %d, want %d", free, cfg.GPUMemory)
	}
}

func TestHangAndSlowdown(t *testing.T) {
	t.Run("hang delays every token by its length", func(t *testing.T) {
		e := newTestEngine(t, constantConfig())
		s, err := e.Submit(0, Request{PromptTokens: 10, MaxTokens: 4, IgnoreEOS: true})
		if err != nil {
			t.Fatal(err)
		}
		tr := &transcript{}
		tr.add(s)
		e.Advance(ms(55))
		tr.collect(ms(50))
		e.Hang(ms(55), ms(100))
		now := ms(55)
		for {
			next, ok := e.Advance(now)
			tr.collect(now)
			if !ok {
				break
			}
			now = next
		}
		want := []time.Duration{ms(50), ms(160), ms(170), ms(180)}
		if !reflect.DeepEqual(tr.times[0], want) {
			t.Errorf("token times: got %v, want %v", tr.times[0], want)
		}
	})
	t.Run("hang holds a stepped engine too", func(t *testing.T) {
		e := newTestEngine(t, DefaultConfig())
		e.Hang(0, time.Second)
		tr := run(t, e, []arrival{{at: ms(10), req: Request{PromptTokens: 10, MaxTokens: 2, IgnoreEOS: true}}}, time.Hour)
		if got := tr.times[0][0]; got <= time.Second {
			t.Errorf("first token at %v, inside the hang", got)
		}
	})
	t.Run("slowdown multiplies ttft and itl", func(t *testing.T) {
		e := newTestEngine(t, constantConfig())
		if err := e.SetSlowdown(0, 2.5); err != nil {
			t.Fatal(err)
		}
		tr := run(t, e, []arrival{{req: Request{PromptTokens: 10, MaxTokens: 3, IgnoreEOS: true}}}, time.Hour)
		want := []time.Duration{ms(125), ms(150), ms(175)}
		if !reflect.DeepEqual(tr.times[0], want) {
			t.Errorf("token times: got %v, want %v", tr.times[0], want)
		}
		if err := e.SetSlowdown(0, 0); err == nil {
			t.Error("slowdown 0 accepted")
		}
	})
	t.Run("crash dies as oom", func(t *testing.T) {
		e := newTestEngine(t, constantConfig())
		s, _ := e.Submit(0, Request{PromptTokens: 10, MaxTokens: 3, IgnoreEOS: true})
		e.Crash(ms(1))
		oom, ok := errorsAs[*OOMError](e.Err())
		if !ok || !oom.Injected {
			t.Fatalf("Err: got %v, want injected *OOMError", e.Err())
		}
		if _, fin := s.Progress(); fin != FinishError {
			t.Errorf("stream finish: got %v, want error", fin)
		}
	})
}

func TestMetricsFollowTheEngine(t *testing.T) {
	reg := promexpo.NewRegistry(nil)
	cfg := constantConfig()
	e, err := NewEngine(cfg, NewLocalMemory(cfg.GPUMemory), WithRegistry(reg))
	if err != nil {
		t.Fatal(err)
	}
	tr := run(t, e, []arrival{
		{req: Request{PromptTokens: 40, MaxTokens: 7, IgnoreEOS: true}},
		{req: Request{PromptTokens: 60, MaxTokens: 3, IgnoreEOS: true}},
	}, time.Hour)
	if len(tr.times[0]) != 7 || len(tr.times[1]) != 3 {
		t.Fatalf("tokens: %d and %d", len(tr.times[0]), len(tr.times[1]))
	}
	tests := []struct {
		name string
		c    interface{ Value() float64 }
		want float64
	}{
		{"prompt tokens", e.m.promptTokens, 100},
		{"generation tokens", e.m.genTokens, 10},
		{"length successes", e.m.success[FinishLength], 2},
		{"running", e.m.running, 0},
	}
	for _, tt := range tests {
		if got := tt.c.Value(); got != tt.want {
			t.Errorf("%s: got %v, want %v", tt.name, got, tt.want)
		}
	}
	n := 0
	for _, f := range reg.Gather() {
		if f.Name == "vllm:inter_token_latency_seconds" {
			n = len(f.Metrics)
		}
	}
	if n != 1 {
		t.Errorf("itl histogram: %d series, want 1", n)
	}
}

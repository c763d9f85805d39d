package workload_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/llmchaos/llmchaos/xk6-llm/engine"
	"github.com/llmchaos/llmchaos/xk6-llm/recording"
	"github.com/llmchaos/llmchaos/xk6-llm/workload"
)

func ExampleParseStages() {
	stages, err := workload.ParseStages("30s:10,1m:50,30s:0")
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, st := range stages {
		fmt.Printf("ramp to %v req/s over %v\n", st.Target, st.Duration)
	}
	_, err = workload.ParseStages("30s:10,1x:50")
	fmt.Println(err)
	// Output:
	// ramp to 10 req/s over 30s
	// ramp to 50 req/s over 1m0s
	// ramp to 0 req/s over 30s
	// stages "30s:10,1x:50": stage 2 "1x:50": duration "1x" is not a duration (e.g. 30s, 1m)
}

func ExampleNewArrivals() {
	// 0 → 4 req/s over 2 s, constant pacing: the k-th arrival is where the
	// integral of the rate (t² here) reaches k.
	cfg := workload.ArrivalConfig{Ramp: workload.Ramp{From: 0, To: 4}, Arrival: workload.ArrivalConstant, Duration: 2 * time.Second}
	arr, err := workload.NewArrivals(cfg.WithDefaults(), rand.New(rand.NewPCG(1, 2)))
	if err != nil {
		fmt.Println(err)
		return
	}
	for a, ok := arr.Next(); ok; a, ok = arr.Next() {
		fmt.Println(a.At.Round(time.Millisecond))
	}
	// Output:
	// 0s
	// 1s
	// 1.414s
	// 1.732s
}

func ExampleParseDist() {
	d, err := workload.ParseDist("lognormal:1020:0.8,max=6144")
	fmt.Println(d, err, d.Kind, d.A, d.B, d.Max)
	_, err = workload.ParseDist("normal:abc:5")
	fmt.Println(err)
	// Output:
	// lognormal:1020:0.8,max=6144 <nil> lognormal 1020 0.8 6144
	// length distribution "normal:abc:5": mean "abc" is not a number
}

func ExampleBuildRequest() {
	// The engine's loop over a multi-turn session: build each turn's
	// request from the history so far, send it, append the reply.
	w, err := workload.New(workload.Config{
		InputTokens: workload.FixedDist(100), OutputTokens: workload.FixedDist(20), Turns: workload.FixedDist(3),
	}.WithDefaults(), rand.New(rand.NewPCG(1, 2)))
	if err != nil {
		fmt.Println(err)
		return
	}
	s := w.Next(rand.New(rand.NewPCG(3, 4)), workload.Arrival{})
	var history []workload.Message
	for i, turn := range s.Turns {
		req := workload.BuildRequest("my-model", s, i, history)
		fmt.Printf("turn %d: %d messages, ~%d prompt tokens, max_tokens %d\n", i, len(req.Messages), req.PromptTokens, req.MaxTokens)
		reply := fmt.Sprintf("%080d", i) // the client's received text: 80 bytes = 20 tokens
		history = workload.AppendTurn(history, turn, reply)
	}
	// Output:
	// turn 0: 1 messages, ~104 prompt tokens, max_tokens 20
	// turn 1: 3 messages, ~232 prompt tokens, max_tokens 20
	// turn 2: 5 messages, ~360 prompt tokens, max_tokens 20
}

func ExamplePacer_Run() {
	clock := recording.NewRunClock()
	arr, err := workload.NewArrivals(workload.ArrivalConfig{Rate: 1000, Arrival: workload.ArrivalConstant, Requests: 3}.WithDefaults(), rand.New(rand.NewPCG(1, 2)))
	if err != nil {
		fmt.Println(err)
		return
	}
	pacer := engine.NewPacer(clock, engine.PacerOptions{})
	err = pacer.Run(context.Background(), arr, func(seq uint64, a workload.Arrival, woke time.Duration) bool {
		// An engine would hand a to a waiting worker here.
		fmt.Println(seq, a.At, woke >= a.At)
		return true
	})
	fmt.Println(err)
	// Output:
	// 0 0s true
	// 1 1ms true
	// 2 2ms true
	// <nil>
}

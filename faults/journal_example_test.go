package faults_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"

	"github.com/llmchaos/llmchaos/faults"
)

// A run journals a fault before injecting it and dies without reverting it;
// Recover replays the revert specs it left behind.
func ExampleRecover() {
	dir, err := os.MkdirTemp("", "run")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(dir)

	// The run: intent, then the fault's revert spec, then the change.
	j, err := faults.Open(dir)
	if err != nil {
		fmt.Println(err)
		return
	}
	e, _ := j.Begin("slow-net", "network.latency", "proxy 127.0.0.1:8001")
	_ = e.Will(faults.RevertSpec{Kind: "demo", Data: json.RawMessage(`{"rule":"r1"}`)})
	_ = e.Injected()
	_ = j.Close() // as if the run were killed here

	// `llmchaos recover`, later, in another process.
	pend, _ := faults.Pending(dir)
	fmt.Println("pending:", len(pend), pend[0].Name)
	reverters := map[string]faults.Reverter{
		"demo": func(_ context.Context, data json.RawMessage) error {
			fmt.Println("revert", string(data))
			return nil
		},
	}
	rep, err := faults.Recover(context.Background(), dir, reverters)
	fmt.Println("recovered:", len(rep.Faults), "error:", err)
	pend, _ = faults.Pending(dir)
	fmt.Println("pending:", len(pend))
	// Output:
	// pending: 1 slow-net
	// revert {"rule":"r1"}
	// recovered: 1 error: <nil>
	// pending: 0
}

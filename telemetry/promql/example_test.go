package promql_test

import (
	"fmt"

	"github.com/llmchaos/llmchaos/telemetry/promql"
)

func ExampleParseExpect() {
	e, err := promql.ParseExpect("<= 0.5")
	if err != nil {
		panic(err)
	}
	fmt.Println(e, e.Holds(0.4), e.Holds(0.7))
	_, err = promql.ParseExpect("< 500ms")
	fmt.Println(err)
	// Output:
	// <= 0.5 true false
	// expect "< 500ms": "500ms" is not a finite number (units are not supported: write 0.5, not 500ms)
}

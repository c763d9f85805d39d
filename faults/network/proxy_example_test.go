package network_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"

	"github.com/llmchaos/llmchaos/faults"
	"github.com/llmchaos/llmchaos/faults/network"
)

// A proxy in front of a target answers a seeded share of requests with an
// injected 503, deciding request by request on one keep-alive connection.
func ExampleProxy() {
	target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = io.WriteString(w, "ok")
	}))
	defer target.Close()

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	p, err := network.Listen(ctx, network.Config{Upstream: strings.TrimPrefix(target.URL, "http://"), Mode: network.ModeHTTP})
	if err != nil {
		fmt.Println(err)
		return
	}
	served := make(chan error, 1)
	go func() { served <- p.Serve(ctx) }()
	defer func() {
		cancel()
		<-served
	}()

	params := &network.HTTPErrorParams{RequestMatch: network.RequestMatch{Probability: 0.5}, Status: 503}
	fault, err := network.NewToxic("errors", p, params, 1)
	if err != nil {
		fmt.Println(err)
		return
	}
	undo, err := fault.Inject(ctx, faults.NopLog{})
	if err != nil {
		fmt.Println(err)
		return
	}
	client := &http.Client{Transport: &http.Transport{Proxy: nil}}
	get := func() int {
		resp, err := client.Get("http://" + p.Addr() + "/v1/models")
		if err != nil {
			return 0
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode
	}
	var statuses []string
	for range 8 {
		statuses = append(statuses, fmt.Sprint(get()))
	}
	fmt.Println(strings.Join(statuses, " "))
	if err := undo(context.Background()); err != nil {
		fmt.Println(err)
	}
	fmt.Println(get())
	// Output:
	// 503 200 200 200 503 503 200 200
	// 200
}

package benchserver

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"time"
)

// PlainStream is the plain client the load client is measured against:
// net/http with a pool sized to streams, bufio.Scanner over the body and
// encoding/json for each chunk, a time taken per chunk. It returns a
// function that sends body (a JSON chat request) to url+"/chat/completions"
// and returns the content chunks read; first, when set, is called at the
// first one.
func PlainStream(streams int, header http.Header) func(ctx context.Context, url string, body []byte, first func()) (int, error) {
	hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: streams, DisableCompression: true}}
	return func(ctx context.Context, url string, body []byte, first func()) (int, error) {
		hreq, err := http.NewRequestWithContext(ctx, http.MethodPost, url+"/chat/completions", bytes.NewReader(body))
		if err != nil {
			return 0, err
		}
		hreq.Header = header.Clone()
		hreq.Header.Set("Content-Type", "application/json")
		resp, err := hc.Do(hreq)
		if err != nil {
			return 0, err
		}
		defer resp.Body.Close()
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(make([]byte, 64<<10), 16<<20)
		var chunks int
		var times []time.Time
		for sc.Scan() {
			data, ok := bytes.CutPrefix(sc.Bytes(), []byte("data: "))
			if !ok {
				continue
			}
			if string(data) == "[DONE]" {
				break
			}
			var c struct {
				Choices []struct {
					Delta struct {
						Content string `json:"content"`
					} `json:"delta"`
				} `json:"choices"`
			}
			if err := json.Unmarshal(data, &c); err != nil {
				return chunks, err
			}
			if len(c.Choices) > 0 && c.Choices[0].Delta.Content != "" {
				chunks++
				times = append(times, time.Now())
				if chunks == 1 && first != nil {
					first()
				}
			}
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		if len(times) != chunks { // keeps the timestamps live, as a real client would
			return chunks, fmt.Errorf("kept %d timestamps for %d chunks", len(times), chunks)
		}
		return chunks, sc.Err()
	}
}

package promexpo_test

import (
	"compress/gzip"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/llmchaos/llmchaos/internal/promexpo"
	"github.com/llmchaos/llmchaos/internal/promexpo/promexpotest"
)

// prometheusAccept is what Prometheus 2.42 sends with native histograms
// on (scrape.go's protobuf-first Accept header).
const prometheusAccept = "application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;encoding=delimited;q=0.5," +
	"text/plain;version=0.0.4;q=0.4,*/*;q=0.1"

func TestHandlerNegotiates(t *testing.T) {
	reg := promexpo.NewRegistry(nil)
	h := must(reg.Histogram(promexpo.HistogramOpts{Opts: promexpo.Opts{Name: "lat_seconds", Help: "l"},
		NativeBucketFactor: 1.1}))
	h.Observe(0.3)
	srv := httptest.NewServer(promexpo.Handler(reg))
	defer srv.Close()

	tests := []struct {
		name, accept, encoding string
		wantType, wantEncoding string
	}{
		{"no header: text", "", "", promexpo.TextContentType + "; escaping=underscores", ""},
		{"Prometheus with native histograms: protobuf", prometheusAccept, "gzip",
			promexpo.ProtoContentType + "; escaping=underscores", "gzip"},
		{"text preferred", "text/plain;version=0.0.4;q=1,application/vnd.google.protobuf;" +
			"proto=io.prometheus.client.MetricFamily;encoding=delimited;q=0.5", "",
			promexpo.TextContentType + "; escaping=underscores", ""},
		{"protobuf of another message: text", "application/vnd.google.protobuf;proto=other;encoding=delimited", "",
			promexpo.TextContentType + "; escaping=underscores", ""},
		{"escaping asked for", "text/plain;version=0.0.4;escaping=allow-utf-8", "gzip;q=0",
			promexpo.TextContentType + "; escaping=allow-utf-8", ""},
		{"gzip among others", "", "br, gzip;q=0.8", promexpo.TextContentType + "; escaping=underscores", "gzip"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := must(http.NewRequest(http.MethodGet, srv.URL, nil))
			if tt.accept != "" {
				req.Header.Set("Accept", tt.accept)
			}
			// Set by hand, so that the transport does not gunzip for us.
			req.Header.Set("Accept-Encoding", tt.encoding)
			resp := must(http.DefaultClient.Do(req))
			defer func() { _ = resp.Body.Close() }()
			if got := resp.Header.Get("Content-Type"); got != tt.wantType {
				t.Errorf("Content-Type: got %q, want %q", got, tt.wantType)
			}
			if got := resp.Header.Get("Content-Encoding"); got != tt.wantEncoding {
				t.Errorf("Content-Encoding: got %q, want %q", got, tt.wantEncoding)
			}
			var body io.Reader = resp.Body
			if tt.wantEncoding == "gzip" {
				zr, err := gzip.NewReader(resp.Body)
				if err != nil {
					t.Fatalf("gzip: %v", err)
				}
				body = zr
			}
			// The real decoder reads the body as its content type says.
			mfs, err := promexpotest.Decode(body, resp.Header.Get("Content-Type"))
			if err != nil {
				t.Fatal(err)
			}
			if len(mfs) != 1 || mfs[0].GetMetric()[0].GetHistogram().GetSampleCount() != 1 {
				t.Fatalf("decoded %v, want lat_seconds with one observation", mfs)
			}
			native := mfs[0].GetMetric()[0].GetHistogram().GetSchema() == 3
			if proto := strings.HasPrefix(tt.wantType, "application/"); native != proto {
				t.Errorf("native histogram decoded: %v, want %v (only the protobuf form carries it)", native, proto)
			}
		})
	}
}

// Package promexpotest reads what internal/promexpo writes back with the
// real Prometheus libraries (client_model, common/expfmt), for tests: a
// promexpo.Gatherer becomes a prometheus.Gatherer whose families are its
// protobuf exposition decoded by expfmt, so tests written against
// client_golang's testutil check our encoding as a side effect. It is
// never linked into the binary.
package promexpotest

import (
	"bytes"
	"errors"
	"fmt"
	"io"

	"github.com/llmchaos/llmchaos/internal/promexpo"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
)

// Gatherer returns g as a prometheus.Gatherer (see the package
// documentation).
func Gatherer(g promexpo.Gatherer) prometheus.Gatherer {
	return prometheus.GathererFunc(func() ([]*dto.MetricFamily, error) {
		var buf bytes.Buffer
		if err := promexpo.WriteProto(&buf, g.Gather()); err != nil {
			return nil, fmt.Errorf("promexpotest: write protobuf: %w", err)
		}
		return Decode(&buf, promexpo.ProtoContentType)
	})
}

// Decode reads an exposition of the given content type (text or protobuf
// delimited) with expfmt.
func Decode(r io.Reader, contentType string) ([]*dto.MetricFamily, error) {
	dec := expfmt.NewDecoder(r, expfmt.ResponseFormat(httpHeader(contentType)))
	var out []*dto.MetricFamily
	for {
		mf := &dto.MetricFamily{}
		err := dec.Decode(mf)
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, fmt.Errorf("promexpotest: decode %s: %w", contentType, err)
		}
		out = append(out, mf)
	}
}

func httpHeader(contentType string) map[string][]string {
	return map[string][]string{"Content-Type": {contentType}}
}

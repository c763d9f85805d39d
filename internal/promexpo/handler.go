package promexpo

import (
	"bytes"
	"cmp"
	"compress/gzip"
	"net/http"
	"slices"
	"strconv"
	"strings"
)

// Handler serves g's families in the format the request's Accept header
// asks for, as promhttp does: protobuf (which carries native histograms)
// when it accepts application/vnd.google.protobuf with
// proto=io.prometheus.client.MetricFamily and encoding=delimited, else the
// text format; gzipped when Accept-Encoding allows gzip.
func Handler(g Gatherer) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		proto, escaping := negotiate(r.Header.Get("Accept"))
		fams := g.Gather()
		var body bytes.Buffer
		ctype := TextContentType
		if proto {
			ctype = ProtoContentType
			_ = WriteProto(&body, fams) // a bytes.Buffer does not fail
		} else {
			_ = WriteText(&body, fams)
		}
		h := w.Header()
		h.Set("Content-Type", ctype+"; escaping="+escaping)
		if !acceptsGzip(r.Header.Get("Accept-Encoding")) {
			h.Set("Content-Length", strconv.Itoa(body.Len()))
			_, _ = w.Write(body.Bytes())
			return
		}
		h.Set("Content-Encoding", "gzip")
		zw := gzip.NewWriter(w)
		_, _ = zw.Write(body.Bytes())
		_ = zw.Close() // a client that went away is nobody's error
	})
}

// acceptRange is one media range of an Accept header.
type acceptRange struct {
	typ    string // type/subtype, lower case
	params map[string]string
	q      float64
}

// parseAccept splits an Accept header into its ranges, highest q first
// (the header's order among equals).
func parseAccept(h string) []acceptRange {
	var out []acceptRange
	for part := range strings.SplitSeq(h, ",") {
		fields := strings.Split(part, ";")
		ar := acceptRange{typ: strings.ToLower(strings.TrimSpace(fields[0])), params: map[string]string{}, q: 1}
		if ar.typ == "" {
			continue
		}
		for _, p := range fields[1:] {
			k, v, _ := strings.Cut(p, "=")
			k, v = strings.ToLower(strings.TrimSpace(k)), strings.Trim(strings.TrimSpace(v), `"`)
			if k == "q" {
				if q, err := strconv.ParseFloat(v, 64); err == nil {
					ar.q = q
				}
				continue
			}
			ar.params[k] = v
		}
		out = append(out, ar)
	}
	slices.SortStableFunc(out, func(a, b acceptRange) int { return cmp.Compare(b.q, a.q) })
	return out
}

// negotiate reports whether the Accept header h asks for the protobuf
// format before the text format, and the name escaping to announce: the
// one the header names when it is a known scheme, else underscores (the
// names this package writes never need escaping).
func negotiate(h string) (proto bool, escaping string) {
	escaping = "underscores"
	for _, ar := range parseAccept(h) {
		switch e := ar.params["escaping"]; e {
		case "allow-utf-8", "underscores", "dots", "values":
			escaping = e
		}
		if ar.q <= 0 {
			continue
		}
		switch {
		case ar.typ == "application/vnd.google.protobuf" &&
			ar.params["proto"] == "io.prometheus.client.MetricFamily" && ar.params["encoding"] == "delimited":
			return true, escaping
		case ar.typ == "text/plain" && (ar.params["version"] == "" || ar.params["version"] == "0.0.4"),
			ar.typ == "*/*", ar.typ == "text/*":
			return false, escaping
		}
	}
	return false, escaping
}

// acceptsGzip reports whether an Accept-Encoding header allows gzip.
func acceptsGzip(h string) bool {
	for part := range strings.SplitSeq(h, ",") {
		name, params, _ := strings.Cut(part, ";")
		if strings.TrimSpace(strings.ToLower(name)) != "gzip" {
			continue
		}
		if k, v, ok := strings.Cut(params, "="); ok && strings.TrimSpace(k) == "q" {
			if q, err := strconv.ParseFloat(strings.TrimSpace(v), 64); err == nil && q <= 0 {
				return false
			}
		}
		return true
	}
	return false
}

package promql

import (
	"errors"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestParseExpect(t *testing.T) {
	tests := []struct {
		in      string
		want    Expect
		wantErr string
	}{
		{"< 0.5", Expect{OpLT, 0.5}, ""},
		{"<0.5", Expect{OpLT, 0.5}, ""},
		{"  <=  1e3 ", Expect{OpLE, 1000}, ""},
		{"> -2", Expect{OpGT, -2}, ""},
		{">= 0", Expect{OpGE, 0}, ""},
		{"== 1", Expect{OpEQ, 1}, ""},
		{"!= 0", Expect{OpNE, 0}, ""},
		{"", Expect{}, "want an operator"},
		{"0.5", Expect{}, "want an operator"},
		{"= 1", Expect{}, "want an operator"},
		{"<", Expect{}, "no number"},
		{"< 500ms", Expect{}, "units are not supported"},
		{"< NaN", Expect{}, "not a finite number"},
		{"< =1", Expect{}, "not a finite number"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := ParseExpect(tt.in)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("got %v, %v; want error with %q", got, err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Errorf("got %+v, want %+v", got, tt.want)
			}
			if back, err := ParseExpect(got.String()); err != nil || back != got {
				t.Errorf("String %q does not parse back: %v, %v", got.String(), back, err)
			}
		})
	}
}

func TestHolds(t *testing.T) {
	tests := []struct {
		op   Op
		v    float64
		want bool
	}{
		{OpLT, 0.4, true}, {OpLT, 0.5, false},
		{OpLE, 0.5, true}, {OpLE, 0.6, false},
		{OpGT, 0.6, true}, {OpGT, 0.5, false},
		{OpGE, 0.5, true}, {OpGE, 0.4, false},
		{OpEQ, 0.5, true}, {OpEQ, 0.4, false},
		{OpNE, 0.4, true}, {OpNE, 0.5, false},
		{OpLT, math.NaN(), false}, {OpGE, math.NaN(), false}, {OpNE, math.NaN(), true},
	}
	for _, tt := range tests {
		if got := (Expect{tt.op, 0.5}).Holds(tt.v); got != tt.want {
			t.Errorf("%v %s 0.5: got %v, want %v", tt.v, tt.op, got, tt.want)
		}
	}
}

func TestQueryURL(t *testing.T) {
	tests := []struct{ in, want string }{
		{"http://127.0.0.1:9090", "http://127.0.0.1:9090/api/v1/query"},
		{"http://127.0.0.1:9090/", "http://127.0.0.1:9090/api/v1/query"},
		{"https://h/prom", "https://h/prom/api/v1/query"},
		{"http://h/api/v1/query", "http://h/api/v1/query"},
	}
	for _, tt := range tests {
		if got, err := QueryURL(tt.in); err != nil || got != tt.want {
			t.Errorf("QueryURL(%q): got %q, %v; want %q", tt.in, got, err, tt.want)
		}
	}
	for _, bad := range []string{"", "127.0.0.1:9090", "ftp://h"} {
		if _, err := QueryURL(bad); err == nil {
			t.Errorf("QueryURL(%q): got nil error", bad)
		}
	}
}

func TestSpecValidateReportsAll(t *testing.T) {
	err := Spec{URL: "nope", Query: " ", Expect: "about 3"}.Validate()
	for _, want := range []string{`url "nope"`, "query is empty", `expect "about 3"`} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("got %v, want it to mention %s", err, want)
		}
	}
}

// answer is an httptest query API that returns a fixed status and body.
func answer(t *testing.T, status int, body string) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.URL.Path != "/api/v1/query" {
			http.Error(w, "wrong request "+r.Method+" "+r.URL.Path, http.StatusTeapot)
			return
		}
		if err := r.ParseForm(); err != nil || r.PostForm.Get("query") == "" {
			http.Error(w, "no query in the form", http.StatusTeapot)
			return
		}
		w.WriteHeader(status)
		_, _ = io.WriteString(w, body)
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

func TestCheckAnswers(t *testing.T) {
	tests := []struct {
		name       string
		status     int
		body       string
		expect     string
		wantOK     bool
		wantN      int
		wantFail   int
		wantErr    string
		wantAPI    string // errorType of an *APIError
		wantNoData bool
	}{
		{"scalar holds", 200, `{"status":"success","data":{"resultType":"scalar","result":[1700000000.5,"0.25"]}}`,
			"< 0.5", true, 1, 0, "", "", false},
		{"vector one fails", 200, `{"status":"success","data":{"resultType":"vector","result":[` +
			`{"metric":{"i":"a"},"value":[1700000000,"0.1"]},{"metric":{"i":"b"},"value":[1700000000,"0.9"]}]}}`,
			"< 0.5", false, 2, 1, "", "", false},
		{"NaN fails <", 200, `{"status":"success","data":{"resultType":"vector","result":[{"metric":{},"value":[1,"NaN"]}]}}`,
			"< 0.5", false, 1, 1, "", "", false},
		{"+Inf decoded", 200, `{"status":"success","data":{"resultType":"scalar","result":[1,"+Inf"]}}`,
			"> 1e300", true, 1, 0, "", "", false},
		{"empty vector", 200, `{"status":"success","data":{"resultType":"vector","result":[]}}`,
			"< 0.5", false, 0, 0, "no data", "", true},
		{"matrix", 200, `{"status":"success","data":{"resultType":"matrix","result":[]}}`,
			"< 0.5", false, 0, 0, `"matrix" is not supported`, "", false},
		{"bad query", 400, `{"status":"error","errorType":"bad_data","error":"parse error"}`,
			"< 0.5", false, 0, 0, "parse error", "bad_data", false},
		{"proxy error page", 502, `<html>bad gateway</html>`,
			"< 0.5", false, 0, 0, "HTTP 502", "", false},
		{"not JSON", 200, `hello`, "< 0.5", false, 0, 0, "not the query API's JSON", "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := New(Spec{URL: answer(t, tt.status, tt.body), Query: "q", Expect: tt.expect}, Options{})
			if err != nil {
				t.Fatal(err)
			}
			res, err := p.Check(t.Context())
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("got %v, %v; want error with %q", res, err, tt.wantErr)
				}
				if got := errors.Is(err, ErrNoData); got != tt.wantNoData {
					t.Errorf("errors.Is(ErrNoData): got %v, want %v", got, tt.wantNoData)
				}
				if tt.wantAPI != "" {
					ae, ok := errors.AsType[*APIError](err)
					if !ok || ae.Type != tt.wantAPI || ae.StatusCode != tt.status {
						t.Errorf("got %#v, want APIError %s HTTP %d", ae, tt.wantAPI, tt.status)
					}
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if res.OK != tt.wantOK || len(res.Samples) != tt.wantN || len(res.Failing) != tt.wantFail {
				t.Errorf("got ok %v, %d samples, %d failing; want %v, %d, %d: %s",
					res.OK, len(res.Samples), len(res.Failing), tt.wantOK, tt.wantN, tt.wantFail, res)
			}
		})
	}
}

func TestResultString(t *testing.T) {
	r := &Result{Query: "up", Expect: Expect{OpLT, 0.5}, OK: false,
		Samples: []Sample{{Labels: map[string]string{"i": "a"}, Value: 0.9}},
		Failing: []Sample{{Labels: map[string]string{"i": "a", "j": "b"}, Value: 0.9}}}
	want := `promql up: {i="a",j="b"} 0.9 (want < 0.5): FAILED`
	if got := r.String(); got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
}

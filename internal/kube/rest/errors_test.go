package rest_test

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/llmchaos/llmchaos/internal/kube/api/metav1"
	"github.com/llmchaos/llmchaos/internal/kube/apierrors"
	"github.com/llmchaos/llmchaos/internal/kube/rest"
)

// TestServerErrorsMapToAPIErrors: each refusal of the server, with the
// Status the API server sends or a bare body from a proxy in front of it,
// becomes an error its helper recognises, carrying the server's message.
func TestServerErrorsMapToAPIErrors(t *testing.T) {
	status := func(code int, reason, msg string) string {
		return `{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"` + msg +
			`","reason":"` + reason + `","code":` + strconv.Itoa(code) + `}`
	}
	for _, tc := range []struct {
		name        string
		code        int
		body        string
		is          func(error) bool
		isNot       func(error) bool
		reason      metav1.StatusReason
		wantMessage string
	}{
		{"not found", 404, status(404, "NotFound", `pods \"x\" not found`), apierrors.IsNotFound, apierrors.IsConflict,
			metav1.StatusReasonNotFound, `pods "x" not found`},
		{"already exists", 409, status(409, "AlreadyExists", `pods \"x\" already exists`), apierrors.IsAlreadyExists, apierrors.IsConflict,
			metav1.StatusReasonAlreadyExists, `pods "x" already exists`},
		{"conflict", 409, status(409, "Conflict", "the object has been modified"), apierrors.IsConflict, apierrors.IsAlreadyExists,
			metav1.StatusReasonConflict, "the object has been modified"},
		{"forbidden", 403, status(403, "Forbidden", `pods is forbidden: User \"x\" cannot list resource`), apierrors.IsForbidden, apierrors.IsNotFound,
			metav1.StatusReasonForbidden, `pods is forbidden: User "x" cannot list resource`},
		{"gone", 410, status(410, "Gone", "too old"), apierrors.IsGone, apierrors.IsResourceExpired,
			metav1.StatusReasonGone, "too old"},
		{"expired", 410, status(410, "Expired", "too old resource version: 1 (5)"), apierrors.IsResourceExpired, apierrors.IsNotFound,
			metav1.StatusReasonExpired, "too old resource version"},
		{"invalid", 422, status(422, "Invalid", `Pod \"x\" is invalid`), apierrors.IsInvalid, apierrors.IsBadRequest,
			metav1.StatusReasonInvalid, `Pod "x" is invalid`},
		{"bare 404 of a proxy", 404, "<html>not here</html>", apierrors.IsNotFound, apierrors.IsForbidden,
			metav1.StatusReasonNotFound, "the server could not find the requested resource"},
		{"bare 503", 503, "upstream connect error", func(err error) bool {
			return apierrors.ReasonForError(err) == metav1.StatusReasonServiceUnavailable
		}, apierrors.IsInternalError, metav1.StatusReasonServiceUnavailable, "upstream connect error"},
		{"bare 500", 500, "boom", apierrors.IsInternalError, apierrors.IsNotFound,
			metav1.StatusReasonInternalError, "(get pods x)"},
		{"too many requests", 429, status(429, "TooManyRequests", "slow down"), apierrors.IsTooManyRequests, apierrors.IsConflict,
			metav1.StatusReasonTooManyRequests, "slow down"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.WriteHeader(tc.code)
				_, _ = w.Write([]byte(tc.body))
			}))
			defer srv.Close()
			c, err := rest.New(&rest.Config{Host: srv.URL})
			if err != nil {
				t.Fatal(err)
			}
			err = c.Do(t.Context(), rest.Request{Method: http.MethodGet, Path: rest.Path{Prefix: "/api/v1", Namespace: "ns", Resource: "pods", Name: "x"}}, nil)
			if !tc.is(err) || tc.isNot(err) {
				t.Errorf("error %v (%T): helper says %t and the other %t, want true and false", err, err, tc.is(err), tc.isNot(err))
			}
			if got := apierrors.ReasonForError(err); got != tc.reason {
				t.Errorf("reason %q, want %q", got, tc.reason)
			}
			if err == nil || !strings.Contains(err.Error(), tc.wantMessage) {
				t.Errorf("message %v, want one with %q", err, tc.wantMessage)
			}
		})
	}
}

// TestServerAskingToRetryGetsTheSameRequestAgain: a 429 (API priority and
// fairness) or a 503 with Retry-After is sent again, body and all, after
// the seconds it names, as client-go sends it; a 429 without Retry-After
// is an error at once, and a server that keeps asking gets an error after
// the last retry.
func TestServerAskingToRetryGetsTheSameRequestAgain(t *testing.T) {
	t.Parallel()
	var (
		mu     sync.Mutex
		bodies []string
		times  []time.Time
	)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		bodies = append(bodies, string(b))
		times = append(times, time.Now())
		n := len(bodies)
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		switch {
		case r.URL.Path == "/api/v1/namespaces/busy/pods":
			w.Header().Set("Retry-After", "0")
			w.WriteHeader(http.StatusTooManyRequests)
			fmt.Fprint(w, `{"kind":"Status","status":"Failure","reason":"TooManyRequests","message":"still busy","code":429}`)
		case r.URL.Path == "/api/v1/namespaces/bare/pods":
			w.WriteHeader(http.StatusTooManyRequests)
			fmt.Fprint(w, `{"kind":"Status","status":"Failure","reason":"TooManyRequests","message":"no retry-after","code":429}`)
		case n == 1:
			w.Header().Set("Retry-After", "0")
			w.WriteHeader(http.StatusTooManyRequests)
			fmt.Fprint(w, `{"kind":"Status","status":"Failure","reason":"TooManyRequests","message":"slow down","code":429}`)
		case n == 2:
			w.Header().Set("Retry-After", "1")
			w.WriteHeader(http.StatusServiceUnavailable)
		default:
			w.WriteHeader(http.StatusCreated)
			fmt.Fprint(w, `{"kind":"Pod","metadata":{"name":"x"}}`)
		}
	}))
	defer srv.Close()
	c, err := rest.New(&rest.Config{Host: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	var out metav1.ObjectMeta
	var pod struct {
		Metadata *metav1.ObjectMeta `json:"metadata"`
	}
	pod.Metadata = &out
	req := rest.Request{Method: http.MethodPost, Path: rest.Path{Prefix: "/api/v1", Namespace: "ns", Resource: "pods"},
		Body: map[string]any{"metadata": map[string]string{"name": "x"}}}
	if err := c.Do(t.Context(), req, &pod); err != nil || out.Name != "x" {
		t.Fatalf("Do = %v (name %q), want the pod created on the third try", err, out.Name)
	}
	mu.Lock()
	if len(bodies) != 3 || bodies[0] != bodies[2] || bodies[1] != bodies[2] || !strings.Contains(bodies[0], `"name":"x"`) {
		t.Errorf("bodies sent %q, want the same body three times", bodies)
	}
	if gap := times[2].Sub(times[1]); gap < time.Second {
		t.Errorf("third try %v after the second, want the 1 s its Retry-After asked", gap)
	}
	mu.Unlock()

	req.Path.Namespace = "bare"
	if err := c.Do(t.Context(), req, nil); !apierrors.IsTooManyRequests(err) {
		t.Errorf("429 without Retry-After: %v, want a TooManyRequests error", err)
	}
	mu.Lock()
	if len(bodies) != 4 {
		t.Errorf("%d requests, want the 429 without Retry-After sent once", len(bodies)-3)
	}
	mu.Unlock()

	req.Path.Namespace = "busy"
	err = c.Do(t.Context(), req, nil)
	if !apierrors.IsTooManyRequests(err) || !strings.Contains(err.Error(), "still busy") {
		t.Errorf("a server that keeps asking: %v, want its TooManyRequests error", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if got := len(bodies) - 4; got != 11 {
		t.Errorf("%d tries of a request the server keeps refusing, want 11 (one and 10 retries)", got)
	}
}

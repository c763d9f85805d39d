package rest_test

import (
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

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

// Package apierrors is the error of a failed Kubernetes API request: the
// server's Status, and helpers that say which failure it was
// (IsNotFound, IsConflict, ...), as k8s.io/apimachinery's api/errors.
package apierrors

import (
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/llmchaos/llmchaos/internal/kube/api/metav1"
)

// StatusError is a request the server refused or failed: its Status.
type StatusError struct {
	ErrStatus metav1.Status
}

// Error returns the server's message.
func (e *StatusError) Error() string { return e.ErrStatus.Message }

// Status returns the server's Status.
func (e *StatusError) Status() metav1.Status { return e.ErrStatus }

// APIStatus is an error that carries the server's Status.
type APIStatus interface {
	Status() metav1.Status
}

var _ APIStatus = (*StatusError)(nil)

// FromStatus returns the error of a Status the server sent.
func FromStatus(st metav1.Status) *StatusError {
	if st.Status == "" {
		st.Status = "Failure"
	}
	if st.Reason == "" {
		st.Reason = reasonOf(int(st.Code))
	}
	if st.Message == "" {
		st.Message = genericMessage(int(st.Code), "", "", "")
	}
	return &StatusError{ErrStatus: st}
}

// NewGenericServerResponse returns the error of a response with HTTP
// status code that carried no Status: verb and what (a resource, "" when
// unknown) say what the request was, body is what the server said.
func NewGenericServerResponse(code int, verb, what, name, body string) *StatusError {
	return &StatusError{ErrStatus: metav1.Status{
		Status:  "Failure",
		Code:    int32(code),
		Reason:  reasonOf(code),
		Message: genericMessage(code, verb, what, name) + detail(body),
		Details: &metav1.StatusDetails{Name: name, Kind: what},
	}}
}

// NewNotFound returns the error of object name of resource what not found.
func NewNotFound(what, name string) *StatusError {
	return &StatusError{ErrStatus: metav1.Status{
		Status: "Failure", Code: http.StatusNotFound, Reason: metav1.StatusReasonNotFound,
		Message: fmt.Sprintf("%s %q not found", what, name),
		Details: &metav1.StatusDetails{Name: name, Kind: what},
	}}
}

func detail(body string) string {
	body = strings.TrimSpace(body)
	if body == "" {
		return ""
	}
	if len(body) > 200 {
		body = body[:200] + "..."
	}
	return " (" + body + ")"
}

func reasonOf(code int) metav1.StatusReason {
	switch code {
	case http.StatusBadRequest:
		return metav1.StatusReasonBadRequest
	case http.StatusUnauthorized:
		return metav1.StatusReasonUnauthorized
	case http.StatusForbidden:
		return metav1.StatusReasonForbidden
	case http.StatusNotFound:
		return metav1.StatusReasonNotFound
	case http.StatusMethodNotAllowed:
		return metav1.StatusReasonMethodNotAllowed
	case http.StatusNotAcceptable:
		return metav1.StatusReasonNotAcceptable
	case http.StatusConflict:
		return metav1.StatusReasonConflict
	case http.StatusGone:
		return metav1.StatusReasonGone
	case http.StatusRequestEntityTooLarge:
		return metav1.StatusReasonRequestEntityLarge
	case http.StatusUnsupportedMediaType:
		return metav1.StatusReasonUnsupportedMedia
	case http.StatusUnprocessableEntity:
		return metav1.StatusReasonInvalid
	case http.StatusTooManyRequests:
		return metav1.StatusReasonTooManyRequests
	case http.StatusGatewayTimeout:
		return metav1.StatusReasonTimeout
	case http.StatusServiceUnavailable:
		return metav1.StatusReasonServiceUnavailable
	}
	if code >= 500 {
		return metav1.StatusReasonInternalError
	}
	return metav1.StatusReasonUnknown
}

func genericMessage(code int, verb, what, name string) string {
	obj := what
	if name != "" {
		obj = what + " " + name
	}
	switch code {
	case http.StatusUnauthorized:
		return "the server has asked for the client to provide credentials"
	case http.StatusForbidden:
		return "the server does not allow access to the requested resource"
	case http.StatusNotFound:
		return "the server could not find the requested resource"
	case http.StatusConflict:
		return "the server reported a conflict"
	case http.StatusGone:
		return "the resource version requested is too old"
	case http.StatusMethodNotAllowed:
		return "the server does not allow this method on the requested resource"
	case http.StatusTooManyRequests:
		return "the server has received too many requests and has asked us to try again later"
	case http.StatusUnprocessableEntity:
		return "the server rejected our request due to an error in our request"
	case http.StatusGatewayTimeout:
		return "the server was unable to return a response in the time allotted, but may still be processing the request"
	case http.StatusServiceUnavailable:
		return "the server is currently unable to handle the request"
	}
	if code >= 500 {
		return fmt.Sprintf("an error on the server has prevented the request from succeeding (%s %s)", strings.ToLower(verb), obj)
	}
	if code >= 400 {
		return "the server rejected our request for an unknown reason"
	}
	return fmt.Sprintf("unexpected response %d", code)
}

// ReasonForError returns the reason of err's Status, or "" when err
// carries none.
func ReasonForError(err error) metav1.StatusReason {
	var s APIStatus
	if errors.As(err, &s) {
		return s.Status().Reason
	}
	return metav1.StatusReasonUnknown
}

func codeOf(err error) int32 {
	var s APIStatus
	if errors.As(err, &s) {
		return s.Status().Code
	}
	return 0
}

func is(err error, reason metav1.StatusReason, code int) bool {
	if err == nil {
		return false
	}
	r := ReasonForError(err)
	if r == reason {
		return true
	}
	// A Status with no known reason: the code says.
	return r == metav1.StatusReasonUnknown && codeOf(err) == int32(code)
}

// IsNotFound reports whether err says the object or resource does not exist.
func IsNotFound(err error) bool { return is(err, metav1.StatusReasonNotFound, http.StatusNotFound) }

// IsAlreadyExists reports whether err says the object exists already.
func IsAlreadyExists(err error) bool { return is(err, metav1.StatusReasonAlreadyExists, 0) }

// IsConflict reports whether err is a conflict (a precondition or
// resource version that no longer holds).
func IsConflict(err error) bool { return is(err, metav1.StatusReasonConflict, http.StatusConflict) }

// IsForbidden reports whether err says the user may not make the request.
func IsForbidden(err error) bool { return is(err, metav1.StatusReasonForbidden, http.StatusForbidden) }

// IsUnauthorized reports whether err says the server does not know the
// user (no or bad credentials).
func IsUnauthorized(err error) bool {
	return is(err, metav1.StatusReasonUnauthorized, http.StatusUnauthorized)
}

// IsGone reports whether err says the resource version is gone.
func IsGone(err error) bool { return is(err, metav1.StatusReasonGone, http.StatusGone) }

// IsResourceExpired reports whether err says the resource version has
// expired (a watch must list again).
func IsResourceExpired(err error) bool { return is(err, metav1.StatusReasonExpired, 0) }

// IsInvalid reports whether err says the object is invalid.
func IsInvalid(err error) bool {
	return is(err, metav1.StatusReasonInvalid, http.StatusUnprocessableEntity)
}

// IsBadRequest reports whether err says the request was malformed.
func IsBadRequest(err error) bool {
	return is(err, metav1.StatusReasonBadRequest, http.StatusBadRequest)
}

// IsTooManyRequests reports whether err asks the client to slow down.
func IsTooManyRequests(err error) bool {
	return is(err, metav1.StatusReasonTooManyRequests, http.StatusTooManyRequests)
}

// IsTimeout reports whether err says the request timed out on the server.
func IsTimeout(err error) bool { return is(err, metav1.StatusReasonTimeout, http.StatusGatewayTimeout) }

// IsServerTimeout reports whether err says the server could not finish
// in time.
func IsServerTimeout(err error) bool { return is(err, metav1.StatusReasonServerTimeout, 0) }

// IsInternalError reports whether err is an internal error of the server.
func IsInternalError(err error) bool {
	return is(err, metav1.StatusReasonInternalError, http.StatusInternalServerError)
}

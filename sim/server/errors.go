package server

import (
	"encoding/json"
	"net/http"
)

// apiError is an error answered in OpenAI's shape:
// {"error":{"message":...,"type":...,"param":...,"code":...}}.
type apiError struct {
	Status  int     `json:"-"`
	Message string  `json:"message"`
	Type    string  `json:"type"`
	Param   *string `json:"param"`
	Code    string  `json:"code"`
}

func (e *apiError) Error() string { return e.Message }

func badRequest(msg string) *apiError {
	return &apiError{Status: http.StatusBadRequest, Message: msg, Type: "invalid_request_error", Code: "invalid_request"}
}

func paramError(param, msg string) *apiError {
	e := badRequest(msg)
	e.Param = &param
	return e
}

// writeError answers e as JSON with its status.
func writeError(w http.ResponseWriter, e *apiError) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(e.Status)
	_ = json.NewEncoder(w).Encode(struct {
		Error *apiError `json:"error"`
	}{e})
}

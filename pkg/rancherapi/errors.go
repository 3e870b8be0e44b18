package rancherapi

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
)

// Error is a failed API request.
type Error struct {
	Method, Path string
	// Status is the HTTP status; 0 when no answer came.
	Status int
	// Code and FieldName are norman's ("NotUnique", "Cluster name").
	Code, FieldName string
	// Message is the error's text: a string message kept whole, list
	// messages and errors[].message joined with "; " (RA-11).
	Message string
	// Cause is a transport error, when no answer came.
	Cause error
	// Unknown means the request may have been applied: its answer was lost.
	Unknown bool
}

func (e *Error) Error() string {
	what := fmt.Sprintf("rancher: %s %s", e.Method, e.Path)
	switch {
	case e.Cause != nil && e.Unknown:
		return fmt.Sprintf("%s: no answer, so whether it was applied is unknown: %v", what, e.Cause)
	case e.Cause != nil:
		return fmt.Sprintf("%s: %v", what, e.Cause)
	}
	text := e.Message
	if text == "" { // norman's NotUnique and MissingRequired carry none
		text = strings.TrimSpace(e.Code + " " + e.FieldName)
	}
	return fmt.Sprintf("%s: %d %s: %s", what, e.Status, http.StatusText(e.Status), text)
}

func (e *Error) Unwrap() error { return e.Cause }

// IsNotFound reports a 404 answer.
func IsNotFound(err error) bool {
	var e *Error
	return errors.As(err, &e) && e.Status == http.StatusNotFound
}

// IsNotUnique reports norman's answer to a create whose name is taken.
func IsNotUnique(err error) bool {
	var e *Error
	return errors.As(err, &e) && e.Code == "NotUnique"
}

// OutcomeUnknown reports a failed request that may have been applied: no
// answer, or a 5xx from a proxy or after a commit.
func OutcomeUnknown(err error) bool {
	var e *Error
	return errors.As(err, &e) && (e.Unknown || e.Status >= http.StatusInternalServerError)
}

// errorOf reads an error answer: norman's {"code","fieldName","message"},
// the auth filter's {"status":"401","message"}, a list-valued message or
// errors[] from a proxy, or plain text (RA-11).
func errorOf(method, path string, status int, raw []byte) *Error {
	e := &Error{Method: method, Path: path, Status: status}
	var body struct {
		Code      string          `json:"code"`
		FieldName string          `json:"fieldName"`
		Message   json.RawMessage `json:"message"`
		Errors    []struct {
			Message json.RawMessage `json:"message"`
		} `json:"errors"`
	}
	if json.Unmarshal(raw, &body) != nil {
		e.Message = strings.TrimSpace(string(raw))
		if len(e.Message) > 500 {
			e.Message = e.Message[:500] + "…"
		}
		return e
	}
	e.Code, e.FieldName = body.Code, body.FieldName
	parts := messages(body.Message)
	for _, x := range body.Errors {
		parts = append(parts, messages(x.Message)...)
	}
	e.Message = strings.Join(parts, "; ")
	return e
}

// messages reads a message that is a string, a list of strings, or absent.
func messages(raw json.RawMessage) []string {
	var one string
	if json.Unmarshal(raw, &one) == nil {
		if one == "" {
			return nil
		}
		return []string{one}
	}
	var many []any
	if json.Unmarshal(raw, &many) != nil {
		return nil
	}
	var out []string
	for _, m := range many {
		if s := strings.TrimSpace(fmt.Sprint(m)); s != "" {
			out = append(out, s)
		}
	}
	return out
}

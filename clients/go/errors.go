package svc

// Errors of the client library.
//
//	*APIError               a non-2xx answer: Status, Code (spec/errors.json), Message;
//	                        errors.Is(err, ErrAppNotFound) etc. match its code (error_codes.go)
//	ErrTransportDisconnected the persistent transport (TCP, WSS) is gone: a connection error, never a timeout
//	ErrAppRemoved           WaitForAsyncRun: the app was removed before its process exited
//	ErrProcessSuperseded    worker: 412, the process key belongs to a superseded process (no retry)
//	ErrWorkerRejected       worker: 400, a permanent rejection (no retry); returned wrapped
//	ErrWorkerEnvironment    worker: SVC_PROCESS_KEY or SVC_APPLICATION_NAME missing (never retried)
//	ErrWaitTimeout          Wait/WaitContext: the deadline passed before the process exited

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

var (
	// ErrTransportDisconnected: the TCP or WSS connection is gone (closed, reset, undecodable
	// frame). Requests in flight and later requests fail with it; it is never a timeout.
	ErrTransportDisconnected = errors.New("svc: transport disconnected")
	// ErrAppRemoved: WaitForAsyncRun saw the run's application removed before its exit.
	ErrAppRemoved = errors.New("svc: app removed before exit")
	// ErrWorkerRejected: the daemon answered a worker request with 400 (invalid request, or a
	// process key in the query string). The worker stops; the returned error wraps this one.
	ErrWorkerRejected = errors.New("svc: worker request rejected")
	// ErrWorkerEnvironment: SVC_PROCESS_KEY or SVC_APPLICATION_NAME is not set: the process
	// was not started by svc. Never retried.
	ErrWorkerEnvironment = errors.New("svc: not a managed svc process")
	// ErrWaitTimeout: Wait/WaitContext gave up before the process exited.
	ErrWaitTimeout = errors.New("svc: wait timed out before process exit")
	// ErrNotPersistent: an operation that needs a persistent transport (TCP or WSS) was called
	// on the REST client.
	ErrNotPersistent = errors.New("svc: this operation needs a TCP or WSS client")
)

// ErrorCode is the sentinel of one code of the error registry (spec/errors.json). An *APIError
// with that code matches it with errors.Is.
type ErrorCode struct {
	Code   string
	Status int
}

func (e *ErrorCode) Error() string { return fmt.Sprintf("svc: %s (%d)", e.Code, e.Status) }

// APIError is a non-2xx answer of the daemon. Its body is {"error": code, "message": text}; an
// answer without such a body keeps the raw text in Message and an empty Code.
type APIError struct {
	StatusCode int
	Code       string
	Message    string
	// Op is the operation, e.g. "GET /svc/app/x".
	Op      string
	Headers map[string]string
}

func (e *APIError) Error() string {
	if e.Code != "" {
		return fmt.Sprintf("%s failed with status %d (%s): %s", e.Op, e.StatusCode, e.Code, e.Message)
	}
	return fmt.Sprintf("%s failed with status %d: %s", e.Op, e.StatusCode, e.Message)
}

// Is matches the sentinel of the answer's code.
func (e *APIError) Is(target error) bool {
	code, ok := target.(*ErrorCode)
	return ok && e.Code != "" && code.Code == e.Code
}

// CodeError returns the sentinel of a registry code, or nil for a code this library does not know.
func CodeError(code string) *ErrorCode {
	return errorCodes[code]
}

const maxErrorMessage = 2048

func newAPIError(op string, status int, body []byte, headers map[string]string) *APIError {
	e := &APIError{StatusCode: status, Op: op, Headers: headers}
	var parsed struct {
		Error   string `json:"error"`
		Message string `json:"message"`
	}
	if json.Unmarshal(body, &parsed) == nil && parsed.Error != "" {
		e.Code = parsed.Error
		e.Message = parsed.Message
	} else {
		e.Message = strings.TrimSpace(string(body))
	}
	if e.Code == "" && status == 401 {
		// No JSON body (a refused WebSocket upgrade): the RFC 6750 challenge names the error.
		e.Code = "unauthorized"
		for k, v := range headers {
			if strings.EqualFold(k, "WWW-Authenticate") && strings.Contains(v, `error="invalid_token"`) {
				e.Code = "invalid_token"
			}
		}
	}
	if len(e.Message) > maxErrorMessage {
		e.Message = e.Message[:maxErrorMessage] + "…"
	}
	return e
}

package api

import (
	"errors"
	"fmt"
	"net/http"
)

// Code classifies an error the same way on every surface: HTTP status, CLI
// exit code and (later) MCP tool errors all derive from it.
type Code string

// The error codes of the API. Clients switch on these, never on messages.
const (
	CodeInvalid      Code = "invalid"
	CodeNotFound     Code = "not_found"
	CodeConflict     Code = "conflict"
	CodeUnauthorized Code = "unauthorized"
	CodePermission   Code = "permission"
	CodeTooLarge     Code = "too_large"
	CodeUnavailable  Code = "unavailable"
	CodeInternal     Code = "internal"
)

// Exit codes of the CLI (SPEC.md).
const (
	ExitOK          = 0
	ExitError       = 1
	ExitUsage       = 2
	ExitNotFound    = 3
	ExitConflict    = 4
	ExitUnreachable = 5
)

// codeTable is the single place that says what each code means to HTTP and
// to a shell script.
var codeTable = map[Code]struct{ status, exit int }{
	CodeInvalid:      {http.StatusBadRequest, ExitUsage},
	CodeNotFound:     {http.StatusNotFound, ExitNotFound},
	CodeConflict:     {http.StatusConflict, ExitConflict},
	CodeUnauthorized: {http.StatusUnauthorized, ExitError},
	CodePermission:   {http.StatusForbidden, ExitError},
	CodeTooLarge:     {http.StatusRequestEntityTooLarge, ExitUsage},
	CodeUnavailable:  {http.StatusServiceUnavailable, ExitUnreachable},
	CodeInternal:     {http.StatusInternalServerError, ExitError},
}

// HTTPStatus is the status the daemon answers for code.
func HTTPStatus(c Code) int {
	if e, ok := codeTable[c]; ok {
		return e.status
	}
	return http.StatusInternalServerError
}

// ExitCode is the process exit code the CLI uses for code.
func ExitCode(c Code) int {
	if e, ok := codeTable[c]; ok {
		return e.exit
	}
	return ExitError
}

// CodeForStatus recovers a code from a bare HTTP status, for answers that
// carry no JSON body (a proxy, a panic before the handler).
func CodeForStatus(status int) Code {
	for c, e := range codeTable {
		if e.status == status {
			return c
		}
	}
	if status >= 500 {
		return CodeInternal
	}
	return CodeInvalid
}

// Error is the JSON body of every failed request, `{"error": …, "code": …}`,
// and the error type the client returns for it.
type Error struct {
	Message string `json:"error"`
	Code    Code   `json:"code"`
}

func (e *Error) Error() string { return e.Message }

// Errorf builds an *Error with a formatted message.
func Errorf(code Code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// ErrorCode returns the code of err, or CodeInternal for errors that carry
// none.
func ErrorCode(err error) Code {
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return CodeInternal
}

package contract

import (
	"errors"
	"fmt"
	"net/http"
)

// Code classifies an error the same way on every surface: the HTTP status
// and the CLI exit code both come from codeTable, and the MCP server shows a
// coded error's message to the model where it hides an uncoded one. It is
// the daemon's one error vocabulary: the store builds coded errors, the
// plugin boundary (host/runner, host/docs) turns the sdk's error classes into codes,
// and everything above passes them on.
type Code string

// The error codes of the API. Clients switch on these, never on messages.
const (
	CodeInvalid      Code = "invalid"
	CodeNotFound     Code = "not_found"
	CodeConflict     Code = "conflict"
	CodeUnauthorized Code = "unauthorized"
	CodePermission   Code = "permission"
	CodeTooLarge     Code = "too_large"
	// CodeMediaType: a body in another format than the route takes (JSON
	// sent as text/plain or without a Content-Type).
	CodeMediaType Code = "unsupported_media_type"
	// CodeUnavailable: the daemon answered, but cannot do it now (the store
	// busy, a plugin broken or restarting), or it accepted the request and
	// did not answer in time; retrying may work.
	CodeUnavailable Code = "unavailable"
	CodeInternal    Code = "internal"
	// CodeUnreachable: no daemon answered at all (nothing listening, the
	// connection refused or dropped before an answer, a daemon that did not
	// start). Only the client side (Client and the CLI) produces it; a
	// proxy's 502 means the same.
	CodeUnreachable Code = "unreachable"
)

// Exit codes of the CLI (SPEC.md). Scripts rely on them: 5 means only that
// no daemon answered, so a script may start one; 6 that one answered
// "unavailable, retry".
const (
	ExitOK          = 0
	ExitError       = 1
	ExitUsage       = 2
	ExitNotFound    = 3
	ExitConflict    = 4
	ExitUnreachable = 5
	ExitUnavailable = 6
	// ExitInterrupted is the shell's 128 + SIGINT: the user pressed Ctrl-C.
	ExitInterrupted = 130
)

// ExitCodesHelp is the list of exit codes for --help and the README.
const ExitCodesHelp = `Exit codes: 0 ok, 1 error, 2 usage (a bad command, flag or value), 3 not found,
4 conflict, 5 no daemon answered (none running at the address in daemon.json),
6 the daemon answered "unavailable, retry" or accepted a request but did not
answer within --request-timeout (it may still act on it: check before
retrying), 130 interrupted (Ctrl-C).`

// codeTable is the single place that says what each code means to HTTP and
// to a shell script.
var codeTable = map[Code]struct{ status, exit int }{
	CodeInvalid:      {http.StatusBadRequest, ExitUsage},
	CodeNotFound:     {http.StatusNotFound, ExitNotFound},
	CodeConflict:     {http.StatusConflict, ExitConflict},
	CodeUnauthorized: {http.StatusUnauthorized, ExitError},
	CodePermission:   {http.StatusForbidden, ExitError},
	CodeTooLarge:     {http.StatusRequestEntityTooLarge, ExitUsage},
	CodeMediaType:    {http.StatusUnsupportedMediaType, ExitUsage},
	CodeUnavailable:  {http.StatusServiceUnavailable, ExitUnavailable},
	CodeInternal:     {http.StatusInternalServerError, ExitError},
	CodeUnreachable:  {http.StatusBadGateway, ExitUnreachable},
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
	// Cause is the error this one was made from, for errors.Is and
	// errors.As in the daemon (a store's pgconn or sqlite error, a
	// context's deadline). It never crosses the wire: a client sees the
	// message and the code only.
	Cause error `json:"-"`
}

func (e *Error) Error() string { return e.Message }

// Unwrap is the cause: errors.Is and errors.As look through a coded error
// to what it was made from.
func (e *Error) Unwrap() error { return e.Cause }

// Is makes errors.Is match by code: errors.Is(err, ErrNotFound) holds for
// any not-found *Error in err's chain, whatever its message.
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	return ok && t.Message == "" && t.Code == e.Code
}

// Sentinels to test a code with errors.Is; never returned themselves.
var (
	ErrInvalid     = &Error{Code: CodeInvalid}
	ErrNotFound    = &Error{Code: CodeNotFound}
	ErrConflict    = &Error{Code: CodeConflict}
	ErrPermission  = &Error{Code: CodePermission}
	ErrTooLarge    = &Error{Code: CodeTooLarge}
	ErrUnavailable = &Error{Code: CodeUnavailable}
)

// Errorf builds an *Error with a formatted message. As with fmt.Errorf,
// an operand of %w is kept as the cause (Unwrap).
func Errorf(code Code, format string, args ...any) *Error {
	err := fmt.Errorf(format, args...)
	e := &Error{Code: code, Message: err.Error()}
	switch err.(type) {
	case interface{ Unwrap() error }, interface{ Unwrap() []error }:
		e.Cause = err
	}
	return e
}

// Wrap gives err a code, keeping it as the cause; the message is err's.
func Wrap(code Code, err error) *Error {
	return &Error{Code: code, Message: err.Error(), Cause: err}
}

// ErrorCode returns the code of the *Error in err's chain, or CodeInternal
// for any other error.
func ErrorCode(err error) Code {
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return CodeInternal
}

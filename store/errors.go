package store

import (
	"errors"
	"fmt"

	"zombiezen.com/go/sqlite"
)

// Code classifies an error so that the HTTP API, MCP tools and CLI can each
// map it to their own status without parsing messages.
type Code string

// The codes a caller can act on; anything else is an internal failure.
const (
	CodeInvalid  Code = "invalid"   // the request can never succeed as written
	CodeNotFound Code = "not_found" // the thing addressed does not exist
	CodeConflict Code = "conflict"  // the request clashes with existing state
	// CodeUnavailable: the database cannot take writes now (disk full, a
	// deleted file); the request itself was fine.
	CodeUnavailable Code = "unavailable"
)

// Error is the store's one error type: a Code for programs and a Message
// that is safe and useful to show to the user as is.
type Error struct {
	Code    Code
	Message string
}

// Error returns the message alone, because that is what users should read.
func (e *Error) Error() string { return e.Message }

// Errorf builds an *Error so that call sites stay one line.
func Errorf(code Code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// ErrorCode reports the Code of err, or "" when err is not (or does not
// wrap) an *Error, which callers should treat as an internal failure.
func ErrorCode(err error) Code {
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return ""
}

// classify turns SQLite constraint failures into typed errors: a duplicate
// key is a conflict, a broken reference or rule is an invalid request.
func classify(err error) error {
	if err == nil || ErrorCode(err) != "" {
		return err
	}
	switch sqlite.ErrCode(err) {
	case sqlite.ResultConstraintPrimaryKey, sqlite.ResultConstraintUnique:
		return &Error{Code: CodeConflict, Message: err.Error()}
	case sqlite.ResultConstraintForeignKey, sqlite.ResultConstraintCheck, sqlite.ResultConstraintNotNull:
		return &Error{Code: CodeInvalid, Message: err.Error()}
	}
	return err
}

// isConflict reports whether err is a duplicate-key failure, for the call
// sites that replace SQLite's wording with one that names the object.
func isConflict(err error) bool {
	c := sqlite.ErrCode(err)
	return c == sqlite.ResultConstraintPrimaryKey || c == sqlite.ResultConstraintUnique
}

package sdk

import (
	"errors"
	"fmt"
)

// The error classes. A caller acts on the kind of failure, not on its text:
// the daemon maps each class to one HTTP status, MCP tool error and CLI exit
// code, and the plugin protocol carries the class across the gRPC boundary so
// that errors.Is keeps working in the daemon for an error made in a plugin
// (containerd's errdefs). Test with errors.Is or Class; make them with
// Errorf so that the message stays the one the user should read.
var (
	// ErrNotFound says the thing asked for does not exist (HTTP 404, exit 3).
	ErrNotFound = errors.New("not found")
	// ErrConflict says the request clashes with what exists, such as
	// creating a document that is already there (HTTP 409, exit 4).
	ErrConflict = errors.New("conflict")
	// ErrInvalid says the input is wrong and retrying it unchanged fails
	// again; the message says what to send instead (HTTP 400).
	ErrInvalid = errors.New("invalid")
	// ErrPermission says the caller may not do this, such as reaching a
	// file outside the documents folder (HTTP 403).
	ErrPermission = errors.New("permission denied")
	// ErrUnavailable says the failure is temporary and the same request may
	// succeed later (HTTP 503).
	ErrUnavailable = errors.New("unavailable")
)

// classes lists the error classes in the order Class tries them.
var classes = []error{ErrNotFound, ErrConflict, ErrInvalid, ErrPermission, ErrUnavailable}

// classed carries a class beside a message; the class is invisible in the
// text so that users read only what went wrong.
type classed struct{ class, err error }

func (e *classed) Error() string   { return e.err.Error() }
func (e *classed) Unwrap() []error { return []error{e.class, e.err} }

// Errorf formats an error of the given class (one of the Err* variables).
// Its Error() is exactly the formatted message, with no class prefix, and
// %w in format keeps the wrapped error reachable.
func Errorf(class error, format string, args ...any) error {
	return &classed{class: class, err: fmt.Errorf(format, args...)}
}

// Class returns the class of err (one of the Err* variables) or nil, so that
// a boundary (HTTP, MCP, gRPC, CLI) can translate it with one switch. The
// outermost Errorf wins when an error of one class wraps another.
func Class(err error) error {
	if c, ok := errors.AsType[*classed](err); ok {
		for _, k := range classes {
			if c.class == k {
				return k
			}
		}
	}
	for _, k := range classes {
		if errors.Is(err, k) {
			return k
		}
	}
	return nil
}

package api

import (
	"errors"

	"github.com/agent-worker/agent-worker/host/contract"
	"github.com/agent-worker/agent-worker/sdk"
)

// The error vocabulary is host/contract's, a leaf the store speaks too;
// api carries it over HTTP under the same names.
type (
	Code  = contract.Code
	Error = contract.Error
)

// The error codes of the API (contract.Code*).
const (
	CodeInvalid      = contract.CodeInvalid
	CodeNotFound     = contract.CodeNotFound
	CodeConflict     = contract.CodeConflict
	CodeUnauthorized = contract.CodeUnauthorized
	CodePermission   = contract.CodePermission
	CodeTooLarge     = contract.CodeTooLarge
	CodeMediaType    = contract.CodeMediaType
	CodeUnavailable  = contract.CodeUnavailable
	CodeInternal     = contract.CodeInternal
	CodeUnreachable  = contract.CodeUnreachable
)

// Exit codes of the CLI (contract.Exit*).
const (
	ExitOK          = contract.ExitOK
	ExitError       = contract.ExitError
	ExitUsage       = contract.ExitUsage
	ExitNotFound    = contract.ExitNotFound
	ExitConflict    = contract.ExitConflict
	ExitUnreachable = contract.ExitUnreachable
	ExitUnavailable = contract.ExitUnavailable
	ExitInterrupted = contract.ExitInterrupted
)

// ExitCodesHelp is the list of exit codes for --help and the README.
const ExitCodesHelp = contract.ExitCodesHelp

// Sentinels to test a code with errors.Is (contract.Err*).
var (
	ErrInvalid     = contract.ErrInvalid
	ErrNotFound    = contract.ErrNotFound
	ErrConflict    = contract.ErrConflict
	ErrPermission  = contract.ErrPermission
	ErrTooLarge    = contract.ErrTooLarge
	ErrUnavailable = contract.ErrUnavailable
)

// HTTPStatus is the status the daemon answers for code.
func HTTPStatus(c Code) int { return contract.HTTPStatus(c) }

// ExitCode is the process exit code the CLI uses for code.
func ExitCode(c Code) int { return contract.ExitCode(c) }

// CodeForStatus recovers a code from a bare HTTP status.
func CodeForStatus(status int) Code { return contract.CodeForStatus(status) }

// Errorf builds an *Error with a formatted message; a %w operand is kept
// as its cause (contract.Errorf).
func Errorf(code Code, format string, args ...any) *Error {
	return contract.Errorf(code, format, args...)
}

// Wrap gives err a code, keeping it as the cause.
func Wrap(code Code, err error) *Error { return contract.Wrap(code, err) }

// ErrorCode returns the code of the *Error in err's chain, or CodeInternal
// for any other error.
func ErrorCode(err error) Code { return contract.ErrorCode(err) }

// sdkCodes is the one table from the sdk's error classes, the vocabulary
// of plugin authors, to the daemon's codes.
var sdkCodes = map[error]Code{sdk.ErrNotFound: CodeNotFound, sdk.ErrConflict: CodeConflict,
	sdk.ErrInvalid: CodeInvalid, sdk.ErrPermission: CodePermission, sdk.ErrUnavailable: CodeUnavailable}

// FromSDK converts an error that crossed from plugin-side code (a plugin
// process, or an sdk helper run in the daemon) into the daemon's
// vocabulary: an error of an sdk class becomes an *Error with its code and
// message; a coded or unclassified error is returned as it is.
func FromSDK(err error) error {
	var coded *Error
	if err == nil || errors.As(err, &coded) {
		return err
	}
	if c, ok := sdkCodes[sdk.Class(err)]; ok {
		return &Error{Code: c, Message: err.Error()}
	}
	return err
}

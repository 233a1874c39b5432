package api

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/agent-worker/agent-worker/sdk"
)

// The sdk's error classes become the daemon's codes through the one table,
// whatever wraps them; a coded or unclassified error is left as it is.
func TestFromSDK(t *testing.T) {
	t.Parallel()
	for class, want := range map[error]Code{sdk.ErrNotFound: CodeNotFound, sdk.ErrConflict: CodeConflict,
		sdk.ErrInvalid: CodeInvalid, sdk.ErrPermission: CodePermission, sdk.ErrUnavailable: CodeUnavailable} {
		err := FromSDK(fmt.Errorf("read notes.md: %w", sdk.Errorf(class, "it is %v", class)))
		var coded *Error
		if !errors.As(err, &coded) || coded.Code != want || coded.Message != fmt.Sprintf("read notes.md: it is %v", class) {
			t.Errorf("%v: FromSDK = %#v, want code %s with the message kept", class, err, want)
		}
	}
	plain := errors.New("disk on fire")
	if got := FromSDK(plain); got != plain || ErrorCode(got) != CodeInternal {
		t.Errorf("an unclassified error: %v (%s)", got, ErrorCode(got))
	}
	already := Errorf(CodeConflict, "taken")
	if got := FromSDK(already); got != already {
		t.Errorf("a coded error changed: %v", got)
	}
	if FromSDK(nil) != nil {
		t.Error("nil became an error")
	}
}

// errors.Is matches a coded error by its code through any wrapping, so a
// store's not-found is api.ErrNotFound at the HTTP layer.
func TestErrorsIsByCode(t *testing.T) {
	t.Parallel()
	err := fmt.Errorf("resume: %w", fmt.Errorf("agent: %w", Errorf(CodeNotFound, `agent "x@global:main" not found`)))
	if !errors.Is(err, ErrNotFound) || errors.Is(err, ErrConflict) || errors.Is(ErrNotFound, err) {
		t.Errorf("errors.Is by code: NotFound %v, Conflict %v", errors.Is(err, ErrNotFound), errors.Is(err, ErrConflict))
	}
	if ErrorCode(err) != CodeNotFound || HTTPStatus(ErrorCode(err)) != 404 || ExitCode(ErrorCode(err)) != ExitNotFound {
		t.Errorf("code %s, status %d, exit %d", ErrorCode(err), HTTPStatus(ErrorCode(err)), ExitCode(ErrorCode(err)))
	}
	if errors.Is(Errorf(CodeNotFound, "a"), Errorf(CodeNotFound, "b")) {
		t.Error("two errors with messages are not the same error")
	}
}

// A coded error keeps what it was made from: errors.Is and errors.As see
// the cause through it, and the cause never reaches the wire.
func TestErrorKeepsItsCause(t *testing.T) {
	cause := &os.PathError{Op: "open", Path: "/x", Err: os.ErrNotExist}
	for name, err := range map[string]*Error{
		"Errorf with %w": Errorf(CodeInternal, "agent %q in the database: %w", "alice", cause),
		"Wrap":           Wrap(CodeInternal, cause),
	} {
		var pe *os.PathError
		if !errors.Is(err, os.ErrNotExist) || !errors.As(err, &pe) || ErrorCode(err) != CodeInternal {
			t.Errorf("%s: the cause is lost: %#v", name, err)
		}
		b, _ := json.Marshal(err)
		if strings.Contains(string(b), "Cause") || !strings.Contains(string(b), `"code":"internal"`) {
			t.Errorf("%s: on the wire: %s", name, b)
		}
	}
	if e := Errorf(CodeInvalid, "bad: %v", cause); e.Cause != nil || errors.Is(e, os.ErrNotExist) {
		t.Errorf("%%v keeps a cause: %#v", e)
	}
}

package docprovider

import (
	"context"
	"regexp"
	"strings"
	"time"

	"github.com/agent-worker/agent-worker/sdk"
)

// Ref names one document: a path inside the documents of one workflow:tag.
// Every operation carries the scope, so one long-lived provider serves every
// workflow instance of the daemon.
type Ref struct {
	Workflow, Tag string
	// Path is the document name relative to the workflow:tag's documents
	// folder, with '/' separators (see ValidatePath).
	Path string
}

// Scope is one workflow:tag instance. Instances share nothing: two tags of
// one workflow have separate documents.
type Scope struct {
	Workflow, Tag string
}

// Info describes a document without its content, so that listing a large
// folder stays cheap.
type Info struct {
	Path      string
	Size      int64 // bytes
	UpdatedAt time.Time
}

// Provider stores documents. The daemon has already checked documentOwner
// and the names before it calls, but a provider validates again (with
// ValidateRef) because it is the last line before the storage. Errors carry
// an sdk class so the daemon can tell the user what happened; every method
// is safe for concurrent use.
type Provider interface {
	// Read returns the document's content, or sdk.ErrNotFound if it does
	// not exist.
	Read(ctx context.Context, r Ref) (string, error)
	// Write creates or replaces the document atomically: a reader sees the
	// old content or the new, never a mix.
	Write(ctx context.Context, r Ref, content string) error
	// Append adds content to the end of the document, creating it if
	// missing. Concurrent appends are never lost; it adds no separator.
	Append(ctx context.Context, r Ref, content string) error
	// Create makes a new document, or fails with sdk.ErrConflict if it
	// exists, leaving it unchanged; teams use it to claim a name.
	Create(ctx context.Context, r Ref, content string) error
	// List returns every document of the scope sorted by Path, and an
	// empty (non-nil) slice when there are none.
	List(ctx context.Context, s Scope) ([]Info, error)
}

// DefaultDocument is the document the team tools use when none is named.
const DefaultDocument = "notes.md"

// MaxDocumentBytes caps a document's size, so that one runaway agent cannot
// fill the disk or blow up every prompt that includes the document.
const MaxDocumentBytes = 1 << 20

// Limits of ValidatePath, to keep names readable and folders shallow.
const (
	maxPathLen      = 200
	maxPathSegments = 8
)

// extensions are the document kinds an agent can usefully read as text.
var extensions = []string{".md", ".txt", ".json", ".yaml"}

// ValidatePath checks a document name and returns sdk.ErrInvalid with a
// message that says what to write instead. The rules keep every document a
// visible text file inside its documents folder (ARCHITECTURE.md invariant
// 9): a relative path of letters, digits, '.', '_', '-' and '/', of at most
// 8 parts and 200 characters, each part starting with a letter or digit, no
// "." or ".." parts, ending in .md, .txt, .json or .yaml.
func ValidatePath(p string) error {
	const example = "use a relative name such as notes.md or specs/api.md"
	switch {
	case p == "":
		return sdk.Errorf(sdk.ErrInvalid, "document name is empty; %s", example)
	case len(p) > maxPathLen:
		return sdk.Errorf(sdk.ErrInvalid, "document name is %d characters long; use at most %d", len(p), maxPathLen)
	case strings.HasPrefix(p, "/"):
		return sdk.Errorf(sdk.ErrInvalid, "document name %q is absolute; %s", p, example)
	}
	if i := strings.IndexFunc(p, func(c rune) bool { return !isNameChar(c) && c != '/' }); i >= 0 {
		return sdk.Errorf(sdk.ErrInvalid, "document name %q contains %q; use only letters, digits, '.', '_', '-' and '/'", p, p[i:i+1])
	}
	parts := strings.Split(p, "/")
	if len(parts) > maxPathSegments {
		return sdk.Errorf(sdk.ErrInvalid, "document name %q has %d parts; use at most %d folder levels", p, len(parts), maxPathSegments)
	}
	for _, s := range parts {
		switch {
		case s == "":
			return sdk.Errorf(sdk.ErrInvalid, "document name %q has an empty part (leading, trailing or double '/'); %s", p, example)
		case s == "." || s == "..":
			return sdk.Errorf(sdk.ErrInvalid, "document name %q contains %q; documents stay inside their folder, %s", p, s, example)
		case !isAlnum(s[0]):
			return sdk.Errorf(sdk.ErrInvalid, "document name %q has part %q that does not start with a letter or digit; hidden files are not documents", p, s)
		}
	}
	for _, ext := range extensions {
		if strings.HasSuffix(p, ext) {
			return nil
		}
	}
	return sdk.Errorf(sdk.ErrInvalid, "document name %q must end in .md, .txt, .json or .yaml", p)
}

// scopeName is the SPEC.md rule for workflow and tag names.
var scopeName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`)

// ValidateScope checks the workflow and tag names and returns sdk.ErrInvalid
// naming the bad part. Providers use the names as folder names or keys, so
// they must never be "..", empty or contain '/'.
func ValidateScope(s Scope) error {
	for _, n := range []struct{ what, name string }{{"workflow", s.Workflow}, {"tag", s.Tag}} {
		if !scopeName.MatchString(n.name) {
			return sdk.Errorf(sdk.ErrInvalid, "%s name %q is invalid; use 1 to 64 letters, digits, '.', '_' or '-', starting with a letter or digit", n.what, n.name)
		}
	}
	return nil
}

// ValidateRef checks the scope and then the path of r: the one call a
// provider makes at the top of every method.
func ValidateRef(r Ref) error {
	if err := ValidateScope(Scope{r.Workflow, r.Tag}); err != nil {
		return err
	}
	return ValidatePath(r.Path)
}

// CheckSize returns sdk.ErrInvalid if a document at path would grow to size
// bytes, more than MaxDocumentBytes; providers call it before every write so
// the limit and its message are the same everywhere.
func CheckSize(path string, size int64) error {
	if size > MaxDocumentBytes {
		return sdk.Errorf(sdk.ErrInvalid, "document %s would be %d bytes; the limit is %d bytes (1 MiB): split it into several documents", path, size, MaxDocumentBytes)
	}
	return nil
}

func isAlnum(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9'
}

func isNameChar(c rune) bool {
	return c < 0x80 && isAlnum(byte(c)) || c == '.' || c == '_' || c == '-'
}

// Failing returns a provider whose every call fails with err. A plugin that
// is not configured to work (a missing setting) serves it, so that it still
// answers the daemon's fingerprint and says what is wrong on use.
func Failing(err error) Provider { return failing{err} }

type failing struct{ err error }

func (f failing) Read(context.Context, Ref) (string, error)   { return "", f.err }
func (f failing) Write(context.Context, Ref, string) error    { return f.err }
func (f failing) Append(context.Context, Ref, string) error   { return f.err }
func (f failing) Create(context.Context, Ref, string) error   { return f.err }
func (f failing) List(context.Context, Scope) ([]Info, error) { return nil, f.err }

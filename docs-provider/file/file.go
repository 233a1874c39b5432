package file

import (
	"context"
	"errors"
	"hash/fnv"
	"io/fs"
	"math/rand/v2"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"

	"github.com/agent-worker/agent-worker/sdk"
	"github.com/agent-worker/agent-worker/sdk/docprovider"
)

var _ docprovider.Provider = (*Provider)(nil)

// Modes of what the provider creates: the documents are the user's files,
// readable like anything else in their project.
const (
	dirMode  = 0o755
	fileMode = 0o644
)

// Provider keeps documents as files. Every access goes through an os.Root
// opened on the documents folder, so neither a crafted name nor a symlink
// planted in the folder can reach a file outside it.
type Provider struct {
	root string
	in   bool // root is the documents folder itself (NewIn)
	// locks serialise the writers of one document (keyed by a hash of its
	// full path), so that a read-modify-rename Append never loses another
	// writer's update. Striping bounds memory; two documents that share a
	// stripe merely wait for each other.
	locks [64]sync.Mutex
}

// New returns a provider that keeps documents under root, normally the
// folder of the workflow file. Nothing is created until the first write.
func New(root string) *Provider {
	return &Provider{root: root}
}

// NewIn returns a provider that keeps documents right in dir, the folder a
// workflow names for them (context.documents.dir), rather than in a
// .workflow/<wf>/<tag>/documents/ tree. Every scope it serves shares that
// folder, so the daemon gives one folder to one running workflow instance.
// Paths stay confined to dir exactly as with New.
func NewIn(dir string) *Provider {
	return &Provider{root: dir, in: true}
}

// dir is the documents folder of a scope.
func (p *Provider) dir(wf, tag string) string {
	if p.in {
		return p.root
	}
	return filepath.Join(p.root, ".workflow", wf, tag, "documents")
}

// Read returns the content of the document.
func (p *Provider) Read(ctx context.Context, r docprovider.Ref) (string, error) {
	if err := check(ctx, r); err != nil {
		return "", err
	}
	root, err := os.OpenRoot(p.dir(r.Workflow, r.Tag))
	if err != nil {
		return "", classify(r.Path, err)
	}
	defer root.Close()
	b, err := root.ReadFile(r.Path)
	if err != nil {
		return "", classify(r.Path, err)
	}
	return string(b), nil
}

// Write creates or replaces the document through a rename, so readers never
// see half of it.
func (p *Provider) Write(ctx context.Context, r docprovider.Ref, content string) error {
	if err := check(ctx, r); err != nil {
		return err
	}
	if err := docprovider.CheckSize(r.Path, int64(len(content))); err != nil {
		return err
	}
	return p.update(r, func(*os.Root, fs.FileInfo) (string, error) { return content, nil })
}

// Append adds content to the end of the document, creating it if missing.
func (p *Provider) Append(ctx context.Context, r docprovider.Ref, content string) error {
	if err := check(ctx, r); err != nil {
		return err
	}
	return p.update(r, func(root *os.Root, old fs.FileInfo) (string, error) {
		if old == nil {
			return content, docprovider.CheckSize(r.Path, int64(len(content)))
		}
		if err := docprovider.CheckSize(r.Path, old.Size()+int64(len(content))); err != nil {
			return "", err
		}
		b, err := root.ReadFile(r.Path)
		if err != nil {
			return "", classify(r.Path, err)
		}
		return string(b) + content, nil
	})
}

// Create makes the document unless it exists.
func (p *Provider) Create(ctx context.Context, r docprovider.Ref, content string) error {
	if err := check(ctx, r); err != nil {
		return err
	}
	if err := docprovider.CheckSize(r.Path, int64(len(content))); err != nil {
		return err
	}
	return p.update(r, func(_ *os.Root, old fs.FileInfo) (string, error) {
		if old != nil {
			return "", sdk.Errorf(sdk.ErrConflict, "document %s already exists", r.Path)
		}
		return content, nil
	})
}

// update replaces the document with what next returns, given the current
// file (nil if missing), holding the document's lock throughout. The new
// content goes to a hidden temporary file in the same folder, which is then
// renamed over the document: a rename replaces a symlink rather than
// writing through it, so nothing outside the folder is ever modified.
func (p *Provider) update(r docprovider.Ref, next func(*os.Root, fs.FileInfo) (string, error)) (err error) {
	dir := p.dir(r.Workflow, r.Tag)
	unlock := p.lock(filepath.Join(dir, r.Path))
	defer unlock()
	if err := os.MkdirAll(dir, dirMode); err != nil {
		return classify(r.Path, err)
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return classify(r.Path, err)
	}
	defer root.Close()
	parent := path.Dir(r.Path)
	if err := root.MkdirAll(parent, dirMode); err != nil {
		return classify(r.Path, err)
	}
	old, err := current(root, r.Path)
	if err != nil {
		return err
	}
	content, err := next(root, old)
	if err != nil {
		return err
	}
	mode := os.FileMode(fileMode)
	if old != nil {
		mode = old.Mode().Perm() // keep a mode the user chose
	}
	tmp := path.Join(parent, "."+path.Base(r.Path)+".tmp-"+strconv.FormatUint(rand.Uint64(), 36))
	f, err := root.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, mode)
	if err != nil {
		return classify(r.Path, err)
	}
	defer func() {
		if err != nil {
			root.Remove(tmp)
		}
	}()
	_, err = f.WriteString(content)
	if err == nil {
		err = f.Sync() // the rename must not land before the data
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = root.Rename(tmp, r.Path)
	}
	if err != nil {
		return classify(r.Path, err)
	}
	return nil
}

// current returns the document's file info, or nil if it does not exist. A
// document that is a symlink leaving the folder, or not a regular file, is
// refused rather than silently replaced.
func current(root *os.Root, name string) (fs.FileInfo, error) {
	fi, err := root.Stat(name)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		if _, lerr := root.Lstat(name); lerr == nil {
			// A dangling symlink: writing would replace the user's link.
			return nil, sdk.Errorf(sdk.ErrPermission, "document %s is a symlink to a missing file; remove the link or point it at a file inside the documents folder", name)
		}
		return nil, nil
	case err != nil:
		return nil, classify(name, err)
	case !fi.Mode().IsRegular():
		return nil, sdk.Errorf(sdk.ErrConflict, "document %s exists but is not a regular file", name)
	}
	return fi, nil
}

// List returns every document of the scope. Hidden and temporary files,
// names a document could not have, and symlinks that leave the folder are
// skipped: they are the user's, not the team's.
func (p *Provider) List(ctx context.Context, s docprovider.Scope) ([]docprovider.Info, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := docprovider.ValidateScope(s); err != nil {
		return nil, err
	}
	out := []docprovider.Info{}
	root, err := os.OpenRoot(p.dir(s.Workflow, s.Tag))
	if errors.Is(err, fs.ErrNotExist) {
		return out, nil
	} else if err != nil {
		return nil, classify(".", err)
	}
	defer root.Close()
	fsys := root.FS()
	err = fs.WalkDir(fsys, ".", func(name string, d fs.DirEntry, err error) error {
		switch {
		case err != nil:
			return err
		case name == ".":
			return nil
		case d.IsDir():
			if strings.HasPrefix(d.Name(), ".") || strings.Count(name, "/") >= 7 {
				return fs.SkipDir
			}
			return nil
		case docprovider.ValidatePath(name) != nil:
			return nil
		}
		fi, err := fs.Stat(fsys, name) // follows symlinks, within the root only
		if err != nil || !fi.Mode().IsRegular() {
			return nil
		}
		out = append(out, docprovider.Info{Path: name, Size: fi.Size(), UpdatedAt: fi.ModTime().UTC()})
		return nil
	})
	if err != nil {
		return nil, classify(".", err)
	}
	slices.SortFunc(out, func(a, b docprovider.Info) int { return strings.Compare(a.Path, b.Path) })
	return out, nil
}

// check validates a reference before any file is touched.
func check(ctx context.Context, r docprovider.Ref) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	return docprovider.ValidateRef(r)
}

// lock takes the writers' lock of the document at full and returns its
// release.
func (p *Provider) lock(full string) func() {
	h := fnv.New32a()
	h.Write([]byte(full))
	m := &p.locks[h.Sum32()%uint32(len(p.locks))]
	m.Lock()
	return m.Unlock
}

// classify gives a file-system error the class the daemon reports.
func classify(name string, err error) error {
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return sdk.Errorf(sdk.ErrNotFound, "document %s does not exist", name)
	case escapes(err):
		return sdk.Errorf(sdk.ErrPermission, "document %s leads outside the documents folder through a symlink; documents must stay inside it", name)
	case errors.Is(err, fs.ErrPermission):
		return sdk.Errorf(sdk.ErrPermission, "document %s: %w", name, err)
	case errors.Is(err, fs.ErrExist), errors.Is(err, syscall.ENOTDIR), errors.Is(err, syscall.EISDIR):
		return sdk.Errorf(sdk.ErrConflict, "document %s clashes with an existing file or folder: %w", name, err)
	}
	return err
}

// escapes reports whether err is os.Root refusing a path that leaves it. The
// os package does not export that error, so match its text.
func escapes(err error) bool {
	for ; err != nil; err = errors.Unwrap(err) {
		if err.Error() == "path escapes from parent" {
			return true
		}
	}
	return false
}

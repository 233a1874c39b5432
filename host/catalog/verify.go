package catalog

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/agent-worker/agent-worker/host/api"
)

// The daemon never executes a file in a plugins directory. When the
// catalog reads a binary to hash it, it writes the very bytes it hashes to
// a private copy named by their sha256 (mode 0500, in a 0700 directory of
// the daemon's home), fingerprints that copy, and every later process of
// the plugin (runs, warm spares, docs providers, status refreshes)
// executes it. A binary replaced in a plugins directory, in place or by a
// rename, is therefore never run before the catalog has hashed and
// fingerprinted the new bytes, and no start hashes anything: a start only
// compares the copy's stat with the one taken when it was written.

// VerifiedDir is where a daemon with home keeps its verified copies. It
// is not a plugins directory: the copies' names are sha256s, which no
// plugin name matches.
func VerifiedDir(home string) string { return filepath.Join(home, "plugins.verified") }

// Verified copies: their mode, and the age after which a temporary file a
// crashed daemon left behind is removed.
const (
	copyMode    = 0o500
	staleTmpAge = 10 * time.Minute
	tmpPrefix   = ".tmp-"
)

// verifyCopy reads the binary at path once, hashing it and copying it into
// the verified directory, and publishes the copy under its sha256. The
// returned release must be called once the catalog entry that refers to
// the copy is stored: until then gc leaves the copy alone.
func (c *Catalog) verifyCopy(path string) (sum, exe string, stamp fileStamp, release func(), err error) {
	sum, tmp, err := c.copyBinary(path)
	if err != nil {
		return "", "", fileStamp{}, nil, err
	}
	c.mu.Lock()
	c.making[sum]++
	c.mu.Unlock()
	release = func() {
		c.mu.Lock()
		if c.making[sum]--; c.making[sum] <= 0 {
			delete(c.making, sum)
		}
		c.mu.Unlock()
	}
	exe, stamp, err = c.publish(tmp, sum)
	if err != nil {
		release()
		return "", "", fileStamp{}, nil, err
	}
	return sum, exe, stamp, release, nil
}

// copyBinary copies path into a new temporary file of the verified
// directory, hashing what it copies, and returns the sha256 and the
// temporary file, synced, mode 0500 and closed (an executable still open
// for writing cannot be started: ETXTBSY).
func (c *Catalog) copyBinary(path string) (sum, tmp string, err error) {
	if err := privateDir(c.copies); err != nil {
		return "", "", err
	}
	src, err := os.Open(path)
	if err != nil {
		return "", "", fmt.Errorf("read binary: %w", err)
	}
	defer src.Close()
	f, err := os.CreateTemp(c.copies, tmpPrefix+"*")
	if err != nil {
		return "", "", fmt.Errorf("make the verified copy: %w", err)
	}
	tmp = f.Name()
	h := sha256.New()
	_, err = io.Copy(f, io.TeeReader(src, h))
	if err == nil {
		err = f.Sync()
	}
	if err == nil {
		err = f.Chmod(copyMode)
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(tmp)
		return "", "", fmt.Errorf("copy binary to %s: %w", c.copies, err)
	}
	return hex.EncodeToString(h.Sum(nil)), tmp, nil
}

// publish moves a fresh copy to its content address. A copy already there
// is never rewritten while it is sound, since a run may be starting it
// and every start checks the copy's stamp: one that an entry runs, still
// the file written for it, or one that holds exactly the bytes of its name
// with the copies' mode (the same plugin in two folders, examined at once,
// or a copy an earlier daemon made). Anything else there is replaced;
// processes still executing a replaced file keep its inode. It returns the
// copy and its stamp.
func (c *Catalog) publish(tmp, sum string) (string, fileStamp, error) {
	final := filepath.Join(c.copies, sum)
	c.copyMu.Lock()
	defer c.copyMu.Unlock()
	if st, err := os.Lstat(final); err == nil && (c.runsCopy(sum, stampOf(st)) || soundCopy(final, st, sum)) {
		os.Remove(tmp)
		return final, stampOf(st), nil
	}
	if err := os.Rename(tmp, final); err != nil {
		os.Remove(tmp)
		return "", fileStamp{}, fmt.Errorf("publish the verified copy: %w", err)
	}
	st, err := os.Lstat(final)
	if err != nil {
		return "", fileStamp{}, fmt.Errorf("publish the verified copy: %w", err)
	}
	return final, stampOf(st), nil
}

// soundCopy reports whether the file at path, as st describes it, is a
// verified copy as publish writes it: a regular file of mode 0500 whose
// bytes hash to sum.
func soundCopy(path string, st os.FileInfo, sum string) bool {
	if !st.Mode().IsRegular() || st.Mode().Perm() != copyMode {
		return false
	}
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return false
	}
	after, err := f.Stat()
	return err == nil && stampOf(after) == stampOf(st) && hex.EncodeToString(h.Sum(nil)) == sum
}

// runsCopy reports whether an entry executes the copy of sum as stamped.
func (c *Catalog) runsCopy(sum string, stamp fileStamp) bool {
	c.mu.RLock()
	defer c.mu.RUnlock()
	for _, e := range c.byPath {
		if e.SHA256 == sum && e.copyStamp == stamp {
			return true
		}
	}
	return false
}

// privateDir makes dir if needed and makes sure it is a directory only
// its owner can enter.
func privateDir(dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("verified copies: %w", err)
	}
	st, err := os.Lstat(dir)
	switch {
	case err != nil:
		return fmt.Errorf("verified copies: %w", err)
	case !st.IsDir():
		return fmt.Errorf("verified copies: %s is not a directory", dir)
	case st.Mode().Perm() != 0o700:
		if err := os.Chmod(dir, 0o700); err != nil {
			return fmt.Errorf("verified copies: %w", err)
		}
	}
	return nil
}

// Verified returns the file to execute for p: its verified copy, after a
// stat shows it is still the file the catalog wrote. A copy changed or
// removed since is refused, and the catalog examines p again; so is a p
// the catalog has since replaced (the caller looked it up just before).
func (c *Catalog) Verified(p api.Plugin) (string, error) {
	c.mu.RLock()
	e, ok := c.byPath[p.Path]
	c.mu.RUnlock()
	if !ok || e.SHA256 != p.SHA256 || e.ExecPath == "" {
		return "", api.Errorf(api.CodeUnavailable, "%s plugin %q (%s) changed while its process was starting: retry", p.Kind, p.Name, p.Path)
	}
	st, err := os.Lstat(e.ExecPath)
	if err == nil && stampOf(st) == e.copyStamp {
		return e.ExecPath, nil
	}
	why := "was changed"
	if errors.Is(err, os.ErrNotExist) {
		why = "was removed"
	}
	c.suspect(p.Path)
	return "", api.Errorf(api.CodeUnavailable, "refused to start %s plugin %q: its verified copy %s %s after the daemon checked it; the daemon verifies %s again: retry",
		p.Kind, p.Name, e.ExecPath, why, p.Path)
}

// suspect has the catalog examine path again, whatever its stamp says,
// because its verified copy failed its check: at once while the catalog
// watches, at the next scan otherwise.
func (c *Catalog) suspect(path string) {
	c.mu.Lock()
	if e, ok := c.byPath[path]; ok {
		e.stamp = fileStamp{}
		c.byPath[path] = e
	}
	c.suspects[path] = true
	c.mu.Unlock()
	select {
	case c.kick <- struct{}{}:
	default:
	}
}

// takeSuspects returns the paths suspect recorded and forgets them.
func (c *Catalog) takeSuspects() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]string, 0, len(c.suspects))
	for p := range c.suspects {
		out = append(out, p)
	}
	clear(c.suspects)
	return out
}

// gc removes the verified copies no catalog entry refers to and none is
// being made of, and temporary files a crashed daemon left. A process
// still executing a removed copy keeps running it. Holding copyMu, it
// cannot race a publish; entries are read after the directory, so a copy
// it lists is either being made (counted in making) or referred to.
func (c *Catalog) gc() {
	c.copyMu.Lock()
	defer c.copyMu.Unlock()
	files, err := os.ReadDir(c.copies)
	if err != nil {
		return
	}
	keep := map[string]bool{}
	c.mu.RLock()
	for _, e := range c.byPath {
		if e.ExecPath != "" {
			keep[filepath.Base(e.ExecPath)] = true
		}
	}
	for sum := range c.making {
		keep[sum] = true
	}
	c.mu.RUnlock()
	for _, f := range files {
		name := f.Name()
		switch {
		case keep[name], !f.Type().IsRegular():
			continue
		case strings.HasPrefix(name, tmpPrefix):
			if info, err := f.Info(); err != nil || time.Since(info.ModTime()) < staleTmpAge {
				continue // another examination is writing it
			}
		case !isSHA256(name):
			continue // not ours
		}
		if err := os.Remove(filepath.Join(c.copies, name)); err != nil && !errors.Is(err, os.ErrNotExist) {
			c.log.Warn("remove unused verified copy", "file", name, "error", err)
		}
	}
}

func isSHA256(s string) bool {
	if len(s) != sha256.Size*2 {
		return false
	}
	_, err := hex.DecodeString(s)
	return err == nil && strings.ToLower(s) == s
}

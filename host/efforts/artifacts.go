package efforts

import (
	"context"
	"errors"
	"io"
	"io/fs"
	"os"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/agent-worker/agent-worker/host/api"
	"github.com/agent-worker/agent-worker/host/contract"
	"github.com/agent-worker/agent-worker/store"
	"github.com/agent-worker/agent-worker/workflow/skill"
)

// MaxArtifact bounds the part of an artifact file the daemon serves.
const MaxArtifact = 1 << 20

// artifactKind is one file an effort may write in its directory.
type artifactKind struct{ kind, name string }

// artifactNames are the files effort e may write in its directory, by
// kind: those its skill's phases declare, its log and its debrief. They
// are the only files of the directory the daemon shows as the effort's.
func artifactNames(e store.Effort, sk *skill.Skill) []artifactKind {
	var out []artifactKind
	add := func(kind string) {
		if !slices.ContainsFunc(out, func(a artifactKind) bool { return a.kind == kind }) {
			out = append(out, artifactKind{kind: kind, name: skill.ArtifactFile(e.Ordinal, e.Skill, kind)})
		}
	}
	for _, p := range sk.Phases {
		for _, kind := range p.Artifacts {
			add(kind)
		}
	}
	add("log")
	add(skill.KindDebrief)
	return out
}

// presentArtifacts are the effort's artifacts that are regular files in
// its directory now. A file reached through a link out of the directory
// is not one of them.
func presentArtifacts(e store.Effort, sk *skill.Skill) []api.EffortArtifact {
	root, err := os.OpenRoot(e.Dir)
	if err != nil {
		return nil // the directory is gone: nothing to show
	}
	defer root.Close()
	var out []api.EffortArtifact
	for _, a := range artifactNames(e, sk) {
		info, err := root.Stat(a.name)
		if err != nil || !info.Mode().IsRegular() {
			continue
		}
		out = append(out, api.EffortArtifact{Name: a.name, Kind: a.kind, Size: info.Size(), UpdatedAt: info.ModTime().UTC()})
	}
	return out
}

// Artifact is the file name of effort id, read from the effort's
// directory: name must be one of the effort's artifacts (a bare file
// name its skill gives), so no other file of the machine can be read
// this way. A file longer than MaxArtifact is cut.
func (s *Service) Artifact(ctx context.Context, id, name string) (api.EffortArtifactFile, error) {
	e, err := s.cfg.DB.GetEffort(ctx, id)
	if err != nil {
		return api.EffortArtifactFile{}, err
	}
	sk, err := parse(e)
	if err != nil {
		return api.EffortArtifactFile{}, err
	}
	names := artifactNames(e, sk)
	i := slices.IndexFunc(names, func(a artifactKind) bool { return a.name == name })
	if i < 0 {
		list := make([]string, len(names))
		for j, a := range names {
			list[j] = a.name
		}
		return api.EffortArtifactFile{}, contract.Errorf(contract.CodeNotFound, "effort %s has no artifact %q: its artifacts are %s", e.ID, name, strings.Join(list, ", "))
	}
	root, err := os.OpenRoot(e.Dir)
	if err != nil {
		return api.EffortArtifactFile{}, contract.Errorf(contract.CodeNotFound, "effort %s: its directory %s cannot be read: %v", e.ID, e.Dir, err)
	}
	defer root.Close()
	f, err := root.Open(name)
	if errors.Is(err, fs.ErrNotExist) {
		return api.EffortArtifactFile{}, contract.Errorf(contract.CodeNotFound, "effort %s has not written %s in %s yet", e.ID, name, e.Dir)
	}
	if err != nil {
		return api.EffortArtifactFile{}, contract.Errorf(contract.CodeNotFound, "effort %s: %s cannot be read: %v", e.ID, name, err)
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return api.EffortArtifactFile{}, err
	}
	if !info.Mode().IsRegular() {
		return api.EffortArtifactFile{}, contract.Errorf(contract.CodeNotFound, "effort %s: %s in %s is not a file", e.ID, name, e.Dir)
	}
	b, err := io.ReadAll(io.LimitReader(f, MaxArtifact+1))
	if err != nil {
		return api.EffortArtifactFile{}, err
	}
	out := api.EffortArtifactFile{EffortArtifact: api.EffortArtifact{Name: name, Kind: names[i].kind, Size: info.Size(), UpdatedAt: info.ModTime().UTC()},
		Dir: e.Dir}
	if len(b) > MaxArtifact {
		cut := MaxArtifact // at a character's start, never inside one
		for cut > 0 && !utf8.RuneStart(b[cut]) {
			cut--
		}
		b, out.Truncated = b[:cut], true
	}
	out.Content = string(b)
	return out, nil
}

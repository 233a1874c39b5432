package skill

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/agent-worker/agent-worker/workflow"
)

// FileName is the name of a skill's file inside its folder: a skill called
// implement is <folder>/implement/SKILL.md, as Claude Code, Codex and
// Gemini CLI lay skills out (the folder may hold the skill's other files).
const FileName = "SKILL.md"

// A Set is the skills found in an ordered list of folders.
type Set struct {
	skills map[string]*Skill
	// Problems are the files that could not be read or parsed, each
	// problem at its line; those skills are left out, the others load.
	Problems workflow.Problems
	// Warnings are skills shadowed by one of the same name in an earlier
	// folder, and next: entries that name no skill of the set.
	Warnings workflow.Problems
}

// Get is the skill called name, or nil.
func (s *Set) Get(name string) *Skill { return s.skills[name] }

// Names are the skills' names, sorted.
func (s *Set) Names() []string {
	names := make([]string, 0, len(s.skills))
	for n := range s.skills {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// Closest is the skill name nearest to name, for a did-you-mean, or "".
func (s *Set) Closest(name string) string { return workflow.Closest(name, s.Names()) }

// Discover finds the skills in folders, each as <folder>/<name>/SKILL.md,
// in order of precedence: a workflow's skills: folders, then the project's
// .agent-worker/skills/, then ~/.agent-worker/skills/ (the caller builds
// the list). On a name clash the earlier folder's skill wins and the other
// is a warning. A folder that does not exist holds no skills; a folder
// entry without a SKILL.md, or whose name begins with a dot, is not a
// skill. A skill whose name: differs from its folder's name is a problem,
// as in the common format.
func Discover(folders []string) *Set {
	set := &Set{skills: map[string]*Skill{}}
	for _, folder := range folders {
		entries, err := os.ReadDir(folder)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			set.Problems = append(set.Problems, workflow.Problem{File: folder, Msg: fmt.Sprintf("read skills folder: %v", err)})
			continue
		}
		for _, e := range entries {
			name := e.Name()
			file := filepath.Join(folder, name, FileName)
			if strings.HasPrefix(name, ".") || !isDir(folder, e) {
				continue
			}
			if _, err := os.Stat(file); errors.Is(err, fs.ErrNotExist) {
				continue
			}
			sk, err := Load(file)
			if err != nil {
				var ps workflow.Problems
				if errors.As(err, &ps) {
					set.Problems = append(set.Problems, ps...)
				} else {
					set.Problems = append(set.Problems, workflow.Problem{File: file, Msg: err.Error()})
				}
				continue
			}
			if sk.Name != name {
				set.Problems = append(set.Problems, workflow.Problem{File: file, Line: 2, Msg: fmt.Sprintf(
					"skill %s is in the folder %s: a skill's folder is named after it; rename one", sk.Name, name)})
				continue
			}
			if first, ok := set.skills[name]; ok {
				set.Warnings = append(set.Warnings, workflow.Problem{File: file, Msg: fmt.Sprintf(
					"skill %s is shadowed by %s, which comes first", name, first.Path)})
				continue
			}
			set.skills[name] = sk
		}
	}
	for _, name := range set.Names() {
		sk := set.skills[name]
		for _, next := range sk.Next {
			if set.skills[next] == nil {
				set.Warnings = append(set.Warnings, workflow.Problem{File: sk.Path, Msg: fmt.Sprintf(
					"next: skill %s is not in any skills folder", next)})
			}
		}
	}
	return set
}

// isDir follows a symbolic link to say whether e is a directory.
func isDir(folder string, e fs.DirEntry) bool {
	if e.IsDir() {
		return true
	}
	if e.Type()&fs.ModeSymlink == 0 {
		return false
	}
	info, err := os.Stat(filepath.Join(folder, e.Name()))
	return err == nil && info.IsDir()
}

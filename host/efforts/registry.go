package efforts

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/fsnotify/fsnotify"
	"github.com/hashicorp/go-hclog"

	"github.com/agent-worker/agent-worker/host/internal/fswatch"
	"github.com/agent-worker/agent-worker/workflow"
	"github.com/agent-worker/agent-worker/workflow/skill"
)

// ProjectFolder is where a project keeps its skills, under its directory;
// the user's are under their home the same way.
const ProjectFolder = ".agent-worker/skills"

// registry finds skills and keeps what it found until a file of a folder
// it searched changes (or it is asked to look again).
type registry struct {
	log hclog.Logger
	// mu guards the fields that follow.
	mu sync.Mutex
	// sets are the skills found, by their folder list.
	sets map[string]*skill.Set
	// watch is the file watcher once Run started it; watched the
	// directories it watches.
	watch   *fsnotify.Watcher
	watched map[string]bool
}

func newRegistry(log hclog.Logger) *registry {
	return &registry{log: log, sets: map[string]*skill.Set{}, watched: map[string]bool{}}
}

// folders is the search order for a workflow's agents: the workflow's
// skills: folders, the project's .agent-worker/skills/, the user's.
func folders(wfSkills []string, project, userHome string) []string {
	var out []string
	add := func(d string) {
		if d != "" && !slices.Contains(out, d) {
			out = append(out, d)
		}
	}
	for _, d := range wfSkills {
		if rest, ok := strings.CutPrefix(d, "~/"); ok && userHome != "" {
			d = filepath.Join(userHome, rest)
		}
		add(d)
	}
	if project != "" {
		add(filepath.Join(project, ProjectFolder))
	}
	if userHome != "" {
		add(filepath.Join(userHome, ProjectFolder))
	}
	return out
}

// discover is the skills of folders: the set found before, unless fresh
// or a file changed since.
func (r *registry) discover(dirs []string, fresh bool) *skill.Set {
	key := strings.Join(dirs, "\x00")
	r.mu.Lock()
	set, ok := r.sets[key]
	r.mu.Unlock()
	if ok && !fresh {
		return set
	}
	set = skill.Discover(dirs)
	r.mu.Lock()
	r.sets[key] = set
	r.watchLocked(dirs)
	r.mu.Unlock()
	return set
}

// problems are the problems of every set found, for the daemon's status.
func (r *registry) problems() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, set := range r.sets {
		for _, p := range set.Problems {
			if s := "skill " + p.String(); !slices.Contains(out, s) {
				out = append(out, s)
			}
		}
	}
	slices.Sort(out)
	return out
}

// watchLocked watches each folder and its skills' folders, once.
func (r *registry) watchLocked(dirs []string) {
	if r.watch == nil {
		return
	}
	for _, d := range dirs {
		subs := []string{d}
		if entries, err := os.ReadDir(d); err == nil {
			for _, e := range entries {
				if e.IsDir() {
					subs = append(subs, filepath.Join(d, e.Name()))
				}
			}
		}
		for _, s := range subs {
			if r.watched[s] {
				continue
			}
			if err := r.watch.Add(s); err == nil {
				r.watched[s] = true
			}
		}
	}
}

// forget drops every set found, so the next question looks again.
func (r *registry) forget() {
	r.mu.Lock()
	clear(r.sets)
	r.mu.Unlock()
}

// run watches the folders searched so far until ctx ends: a change of a
// file in one (a new skill's folder too) makes the next question look
// again. Without a watcher (fsnotify failed) every question looks again.
func (r *registry) run(ctx context.Context) {
	w, err := fsnotify.NewWatcher()
	if err != nil {
		r.log.Warn("skills are rescanned on every request: no file watcher", "error", err)
		return
	}
	defer w.Close()
	r.mu.Lock()
	r.watch = w
	r.mu.Unlock()
	fswatch.Run(ctx, w, 200*time.Millisecond, fswatch.Handler{
		Keep: func(ev fsnotify.Event) bool { return ev.Op != fsnotify.Chmod },
		Settled: func(path string) {
			r.log.Debug("skills changed", "path", path)
			r.forget()
			if info, err := os.Stat(path); err == nil && info.IsDir() {
				r.mu.Lock()
				if !r.watched[path] && r.watch.Add(path) == nil {
					r.watched[path] = true
				}
				r.mu.Unlock()
			}
		},
		Error: func(err error) { r.log.Warn("skills watcher", "error", err); r.forget() },
	})
}

// workflowSkills are the skills: folders of a stored workflow's file.
func workflowSkills(sourcePath, configYAML string) *workflow.File {
	if configYAML == "" {
		return nil
	}
	f, err := workflow.Parse(sourcePath, []byte(configYAML))
	if err != nil {
		return nil // the stored config was good once; an unreadable prompt file is not ours to report
	}
	return f
}

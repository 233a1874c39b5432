package mergequeue

import (
	"github.com/hashicorp/go-hclog"

	"github.com/agent-worker/agent-worker/host/team"
	"github.com/agent-worker/agent-worker/host/worktrees"
	"github.com/agent-worker/agent-worker/store"
)

// Config is what a Service is built from.
type Config struct {
	DB   *store.DB
	Team *team.Service
	// Worktrees does the git work: the repositories' locks, the merges'
	// plumbing, moving a base, the lines a team reads.
	Worktrees *worktrees.Service
	Log       hclog.Logger
	// Observer, when set, hears what the merge queue does; Confine, when
	// set, decides the sandbox of its checks.
	Observer QueueObserver
	Confine  Confine
	// Contain, when set, puts each check in a cgroup of its own
	// (host/runner Cgroups.Contain).
	Contain Contain
	// Member is this daemon's id in a cluster ("" on the embedded
	// store): only the member that owns a workflow works its merge queue.
	Member string
}

// Service is the merge queues of every workflow whose workspace has
// checks.
type Service struct {
	db   *store.DB
	team *team.Service
	wt   *worktrees.Service
	log  hclog.Logger
	// observer, confine, contain and member are Config's; wake wakes
	// RunQueue.
	observer QueueObserver
	confine  Confine
	contain  Contain
	member   string
	wake     chan struct{}
}

// New returns a Service and hands it to cfg.Worktrees, whose integrates
// of a workspace with checks it queues from then on; RunQueue works it.
func New(cfg Config) *Service {
	s := &Service{db: cfg.DB, team: cfg.Team, wt: cfg.Worktrees, log: cfg.Log, observer: cfg.Observer, confine: cfg.Confine,
		contain: cfg.Contain, member: cfg.Member, wake: make(chan struct{}, 1)}
	cfg.Worktrees.UseQueue(s)
	return s
}

// Kick wakes RunQueue (host/worktrees calls it when a workflow resumes or
// reloads: its merge queue may go on, with new checks).
func (s *Service) Kick() { s.kick() }

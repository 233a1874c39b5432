package team

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"unicode/utf8"

	"github.com/hashicorp/go-hclog"

	"github.com/agent-worker/agent-worker/host/api"
	"github.com/agent-worker/agent-worker/host/telemetry"
	"github.com/agent-worker/agent-worker/sdk/docprovider"
	"github.com/agent-worker/agent-worker/store"
)

// Senders that are not agents.
const (
	SenderUser   = "user"   // a human, through the CLI or HTTP API
	SenderSystem = "system" // the daemon itself
)

// Defaults for message sizes (SPEC.md "Long content").
const (
	DefaultLongMessageChars = 4000
	DefaultMaxMessageChars  = 100_000
)

// DocsResolver returns the document provider of a workflow:tag.
type DocsResolver func(ctx context.Context, wf store.Workflow) (docprovider.Provider, error)

// Config wires a Service.
type Config struct {
	DB     *store.DB
	Docs   DocsResolver
	Logger hclog.Logger
	// LongMessageChars is the default length above which a message becomes
	// a resource; a workflow may override it.
	LongMessageChars int
	// MaxMessageChars refuses anything longer outright.
	MaxMessageChars int
	// Notify hears when the loop guard pauses a workflow, and of the
	// questions and approvals waiting for the owner (host/notify); nil
	// tells no one.
	Notify Notifier
}

// Service is the team context engine. It is safe for concurrent use.
type Service struct {
	db   *store.DB
	docs DocsResolver
	log  hclog.Logger
	long int
	max  int
	// expiry wakes RunExpiry when a new proposal may expire sooner.
	expiry chan struct{}
	// claims counts the claims made through the service, so RunLeases
	// can tell that no task has been taken since it last found none held.
	claims atomic.Uint64
	// decided wakes the gated calls waiting on an approval (AwaitApproval).
	decided waiters
	// notify is Config.Notify, never nil.
	notify Notifier
	// Bus carries the team's events (messages, wakes, runs, agent states,
	// workflow changes, tool calls) to in-process listeners: the scheduler
	// and the HTTP event streams. Other parts publish on it too.
	Bus Bus
	// Efforts serves a live session's hooks what they need of the agent's
	// effort (SessionEfforts); host sets it before serving.
	Efforts SessionEfforts
}

// New returns a Service over cfg.DB.
func New(cfg Config) *Service {
	if cfg.Logger == nil {
		cfg.Logger = hclog.NewNullLogger()
	}
	if cfg.LongMessageChars <= 0 {
		cfg.LongMessageChars = DefaultLongMessageChars
	}
	if cfg.MaxMessageChars <= 0 {
		cfg.MaxMessageChars = DefaultMaxMessageChars
	}
	if cfg.Notify == nil {
		cfg.Notify = nopNotifier{}
	}
	return &Service{db: cfg.DB, docs: cfg.Docs, log: cfg.Logger, long: cfg.LongMessageChars, max: cfg.MaxMessageChars,
		expiry: make(chan struct{}, 1), notify: cfg.Notify}
}

// SendRequest is one message to write into a channel.
type SendRequest struct {
	Scope   store.Scope
	From    string // an agent of Scope, SenderUser or SenderSystem
	Content string
	To      string // a member, for a direct message
	Kind    string // default store.KindMessage
	// ByAgent marks a system line that reports an agent's action: it
	// leaves the loop guard's count alone (store.NewMessage.KeepStreak).
	ByAgent bool
}

// Send is the channel's write path: it composes the message (see Compose),
// writes it in one transaction and wakes every recipient. Proposal lines
// and a run's result are written by the store in their own transactions
// and published through Announce the same way.
func (s *Service) Send(ctx context.Context, r SendRequest) (store.Message, error) {
	m, err := s.Compose(ctx, r)
	if err != nil {
		return store.Message{}, err
	}
	msg, err := s.db.AppendMessage(ctx, m)
	if err != nil {
		return store.Message{}, err
	}
	s.Announce(msg)
	return msg, nil
}

// Compose checks a message and resolves it for the store without writing
// it: the sender must be a member, mentions are resolved against the
// members, and long content becomes a resource with a stub in the channel.
// Send writes the result at once; settling a run writes it inside the
// run's settle transaction (store.SettleRun) and then calls Announce, so a
// run's reply gets exactly the treatment of any other message.
func (s *Service) Compose(ctx context.Context, r SendRequest) (store.NewMessage, error) {
	team, err := s.db.Members(ctx, r.Scope)
	if err != nil {
		return store.NewMessage{}, err
	}
	members := team.Names
	if err := checkSender(r.From, members, r.Scope); err != nil {
		return store.NewMessage{}, err
	}
	if strings.TrimSpace(r.Content) == "" {
		return store.NewMessage{}, api.Errorf(api.CodeInvalid, "message is empty: write something")
	}
	if i := strings.IndexByte(r.Content, 0); i >= 0 {
		return store.NewMessage{}, api.Errorf(api.CodeInvalid, "message contains a NUL byte (at byte %d): send text; to pass binary data, write it to a file and send its path", i)
	}
	n := utf8.RuneCountInString(r.Content)
	if n > s.max {
		return store.NewMessage{}, api.Errorf(api.CodeInvalid, "message is %d characters; the limit is %d: put large content in a document (team_doc_write) or resource (resource_create) and send a short message that points to it", n, s.max)
	}
	if r.To != "" {
		if !contains(members, r.To) {
			return store.NewMessage{}, api.Errorf(api.CodeInvalid, "to: %q is not a member of %s; members: %s", r.To, r.Scope, strings.Join(members, ", "))
		}
		if r.To == r.From {
			return store.NewMessage{}, api.Errorf(api.CodeInvalid, "to: you cannot send a direct message to yourself")
		}
	}
	mentions := ParseMentions(r.Content, members, r.From)
	recipients := mentions
	if r.To != "" {
		recipients = append(append([]string{}, mentions...), r.To)
	}
	m := store.NewMessage{
		Workflow: r.Scope.Workflow, Tag: r.Scope.Tag, Sender: r.From,
		Content: r.Content, Kind: r.Kind, To: r.To, Recipients: recipients, KeepStreak: r.ByAgent,
		// The span it is sent in (a run's tool call or result, a
		// kickoff): the run it wakes joins that trace.
		Traceparent: telemetry.Traceparent(ctx),
	}
	long := s.long
	if team.LongMessageChars > 0 {
		long = team.LongMessageChars
	}
	if n > long {
		id := store.NewResourceID()
		m.Resource = &store.NewResource{ID: id, Type: guessType(r.Content), Content: r.Content}
		m.Content = longMessageStub(mentions, id, n)
	}
	return m, nil
}

// Announce tells listeners about a message just written and wakes its
// recipients; Send calls it, and so does whoever wrote a Composed message
// itself.
func (s *Service) Announce(msg store.Message) {
	s.Bus.Publish(Event{Kind: EventMessage, Message: &msg})
	for _, r := range msg.Recipients {
		if r != msg.Sender {
			s.Bus.Publish(Event{Kind: EventWake, Agent: store.AgentKey{Name: r, Workflow: msg.Workflow, Tag: msg.Tag}})
		}
	}
	if msg.LoopGuardTripped {
		s.loopGuardTripped(msg)
	}
}

// loopGuardTripped tells the team and its watchers that msg made the loop
// guard pause its workflow (the store paused it in msg's transaction): a
// system line names the agents that kept answering each other and how to
// go on, and watchers get a workflow event.
func (s *Service) loopGuardTripped(msg store.Message) {
	ctx := context.Background()
	scope := store.Scope{Workflow: msg.Workflow, Tag: msg.Tag}
	wf, err := s.db.GetWorkflow(ctx, scope.Workflow, scope.Tag)
	if err != nil {
		s.log.Warn("loop guard", "workflow", scope.String(), "error", err)
		return
	}
	senders, err := s.db.RecentSenders(ctx, scope, wf.LoopGuard)
	if err != nil {
		s.log.Warn("loop guard", "workflow", scope.String(), "error", err)
	}
	target := api.Target{Workflow: scope.Workflow, Tag: scope.Tag}.Display()
	line := fmt.Sprintf("%s is paused: %d messages in a row came from agents (%s) with no human or system message between, which looks like a loop. "+
		"Nothing is lost: new messages wait unread. Resume with `agent-worker resume %s`; change the limit with loop_guard: {max_rounds: N} in the workflow file (0 turns it off).",
		target, wf.LoopGuard, strings.Join(senders, ", "), target)
	if _, err := s.Send(ctx, SendRequest{Scope: scope, From: SenderSystem, Kind: store.KindSystem, Content: line}); err != nil {
		s.log.Warn("loop guard: post the notice", "workflow", scope.String(), "error", err)
	}
	s.log.Warn("workflow paused by the loop guard", "workflow", scope.String(), "rounds", wf.LoopGuard, "agents", senders)
	s.notifyLoopGuard(ctx, scope, line, senders, wf.LoopGuard)
	s.Bus.Publish(Event{Kind: EventWorkflow, Agent: store.AgentKey{Workflow: scope.Workflow, Tag: scope.Tag}, State: "paused", Error: wf.Error})
}

func checkSender(from string, members []string, scope store.Scope) error {
	if from == SenderUser || from == SenderSystem || contains(members, from) {
		return nil
	}
	return api.Errorf(api.CodeInvalid, "%q is not a member of %s", from, scope)
}

// longMessageStub is what the channel shows instead of a long message: the
// mentions (so recipients are still woken and see who it is for) and how to
// read the whole text.
func longMessageStub(mentions []string, id string, n int) string {
	var b strings.Builder
	for _, m := range mentions {
		b.WriteString("@" + m + " ")
	}
	fmt.Fprintf(&b, "[long message (%d characters) stored as resource %s] Read it with resource_read(\"%s\").", n, id, id)
	return b.String()
}

// guessType calls content with a fenced code block markdown, else text.
func guessType(content string) string {
	for _, line := range strings.Split(content, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			return "markdown"
		}
	}
	return "text"
}

// Read returns a viewer's page of the channel (see store.ReadOptions).
// viewer "" is a human operator who sees direct messages too.
func (s *Service) Read(ctx context.Context, scope store.Scope, viewer string, since int64, limit int) ([]store.Message, error) {
	if since < 0 {
		return nil, api.Errorf(api.CodeInvalid, "since_seq must be >= 0")
	}
	if limit < 0 || limit > 1000 {
		return nil, api.Errorf(api.CodeInvalid, "limit must be between 1 and 1000")
	}
	if _, err := s.db.GetWorkflow(ctx, scope.Workflow, scope.Tag); err != nil {
		return nil, err
	}
	return s.db.ReadChannel(ctx, scope, store.ReadOptions{SinceSeq: since, Limit: limit, Viewer: viewer})
}

// Inbox returns the agent's unread messages, oldest first.
func (s *Service) Inbox(ctx context.Context, k store.AgentKey) ([]store.Message, error) {
	return s.db.Inbox(ctx, k, 0)
}

// Ack marks the agent's inbox read up to and including untilSeq and returns
// the cursor; the cursor never moves back, and acking past the newest
// message the agent was sent is refused (store.AckInbox).
func (s *Service) Ack(ctx context.Context, k store.AgentKey, untilSeq int64) (int64, error) {
	return s.db.AckInbox(ctx, k, untilSeq)
}

// SetStatus records what an agent says it is doing.
func (s *Service) SetStatus(ctx context.Context, k store.AgentKey, status, task *string) error {
	return s.db.SetAgentStatus(ctx, k, status, task)
}

// Members returns the agents of scope.
func (s *Service) Members(ctx context.Context, scope store.Scope) ([]store.Agent, error) {
	return s.db.ListAgents(ctx, store.AgentFilter{Workflow: scope.Workflow, Tag: scope.Tag})
}

// CreateResource stores content under a new res_ id.
func (s *Service) CreateResource(ctx context.Context, k store.AgentKey, content, typ string) (store.Resource, error) {
	n := utf8.RuneCountInString(content)
	if n > 10*s.max {
		return store.Resource{}, api.Errorf(api.CodeInvalid, "resource is %d characters; the limit is %d", n, 10*s.max)
	}
	return s.db.CreateResource(ctx, store.NewResource{Workflow: k.Workflow, Tag: k.Tag, Type: typ, Content: content, CreatedBy: k.Name})
}

// ReadResource returns a resource of scope.
func (s *Service) ReadResource(ctx context.Context, scope store.Scope, id string) (store.Resource, error) {
	return s.db.GetResource(ctx, scope, id)
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// APIMessage is a message in its wire form, shared by HTTP and MCP.
func APIMessage(m store.Message) api.Message {
	mentions := m.Recipients
	if mentions == nil {
		mentions = []string{}
	}
	return api.Message{
		Seq: m.Seq, ID: m.ID, Workflow: m.Workflow, Tag: m.Tag, From: m.Sender,
		Content: m.Content, Kind: m.Kind, To: m.To, Mentions: mentions,
		ResourceID: m.ResourceID, CreatedAt: m.CreatedAt,
	}
}

// APIMessages converts a page of messages.
func APIMessages(ms []store.Message) []api.Message {
	out := make([]api.Message, len(ms))
	for i, m := range ms {
		out[i] = APIMessage(m)
	}
	return out
}

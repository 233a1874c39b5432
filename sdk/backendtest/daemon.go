package backendtest

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agent-worker/agent-worker/sdk/backend"
	"github.com/agent-worker/agent-worker/sdk/tools"
	"github.com/agent-worker/agent-worker/sdk/worker"
)

// Daemon is a fake agent-worker daemon: an MCP server on httptest with
// exactly the tools of tools.Names (same names, arguments and structured
// results; a test fails if the two lists part), kept in memory, that tests
// seed and inspect. It requires the bearer token of a Request, and acts as
// that request's agent.
//
// It is looser than the real daemon where that keeps tests short: any
// well-formed @name is a mention (and makes that name a member), long
// messages are not turned into resources, proposals never expire, and
// tasks have no leases, subtask rule or channel lines.
type Daemon struct {
	// Workflow and Tag name the one team the daemon serves.
	Workflow, Tag string
	// Gate answers the gate endpoint (tools.GatePath) for agent, as the
	// phase of its effort would; nil allows every call. Set it before
	// the run.
	Gate func(agent string, call tools.GateCall) tools.GateDecision

	t   testing.TB
	srv *httptest.Server
	mcp http.Handler

	// mu guards the fields that follow; tool handlers run under it.
	mu        sync.Mutex
	now       func() time.Time
	servers   map[string]*mcp.Server // by agent
	tokens    map[string]string      // bearer token → agent
	members   []string
	messages  []worker.Message
	cursors   map[string]int64
	statuses  map[string]status
	docs      map[string]worker.Document
	contents  map[string]string // document contents by path
	resources map[string]resource
	proposals []*tools.Proposal
	tasks     []*tools.Task
	questions int // asked so far, for ids
	calls     []string
	runs      int
}

type status struct{ State, Task string }

type resource struct {
	ID      string `json:"id"`
	Type    string `json:"type"`
	Content string `json:"content,omitempty"`
	From    string `json:"from,omitempty"`
}

// NewDaemon starts a fake daemon for team @test:main; it stops when t ends.
func NewDaemon(t testing.TB) *Daemon {
	t.Helper()
	d := &Daemon{
		Workflow: "test", Tag: "main", t: t,
		now:     func() time.Time { return time.Now().UTC() },
		servers: map[string]*mcp.Server{}, tokens: map[string]string{},
		cursors: map[string]int64{}, statuses: map[string]status{},
		docs: map[string]worker.Document{}, contents: map[string]string{},
		resources: map[string]resource{},
	}
	d.mcp = mcp.NewStreamableHTTPHandler(d.serverFor, &mcp.StreamableHTTPOptions{JSONResponse: true})
	d.srv = httptest.NewServer(http.HandlerFunc(d.serveHTTP))
	t.Cleanup(func() {
		d.srv.CloseClientConnections()
		d.srv.Close()
	})
	return d
}

// URL is the daemon's MCP endpoint.
func (d *Daemon) URL() string { return d.srv.URL + "/mcp" }

// SetClock replaces the clock that stamps messages and documents, for
// tests that compare times.
func (d *Daemon) SetClock(now func() time.Time) {
	d.mu.Lock()
	d.now = now
	d.mu.Unlock()
}

var namePattern = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9_-]{0,63}$`)

// Request returns a first-attempt run request for agent wired to the
// daemon with a fresh token, a fresh WorkDir and a fresh ProjectDir; agent
// becomes a member of the team.
func (d *Daemon) Request(agent string) backend.Request {
	d.t.Helper()
	if !namePattern.MatchString(agent) {
		d.t.Fatalf("backendtest: %q is not a valid agent name", agent)
	}
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	token := hex.EncodeToString(b)
	d.mu.Lock()
	d.tokens[token] = agent
	d.addMember(agent)
	d.runs++
	run := d.runs
	d.mu.Unlock()
	return backend.Request{
		RunID:   fmt.Sprintf("run-%d", run),
		Attempt: 1,
		Agent:   backend.Agent{Name: agent, Workflow: d.Workflow, Tag: d.Tag, Model: "test-model"},
		Daemon: backend.MCPServer{Name: "agent-worker", URL: d.URL(),
			Headers: map[string]string{"Authorization": "Bearer " + token}},
		WorkDir:    d.t.TempDir(),
		ProjectDir: d.t.TempDir(),
	}
}

// Post writes content into the channel as from ("user" for a human); its
// @mentions put it into those agents' inboxes.
func (d *Daemon) Post(from, content string) worker.Message {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.append(from, content, "", "message")
}

// DM writes a direct message from from to to.
func (d *Daemon) DM(from, to, content string) worker.Message {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.append(from, content, to, "message")
}

// Messages returns every message of the channel, direct ones included.
func (d *Daemon) Messages() []worker.Message {
	d.mu.Lock()
	defer d.mu.Unlock()
	return slices.Clone(d.messages)
}

// Calls returns the names of the tools called so far, in order.
func (d *Daemon) Calls() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return slices.Clone(d.calls)
}

// Document returns a shared document's content and whether it exists.
func (d *Daemon) Document(file string) (string, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	c, ok := d.contents[file]
	return c, ok
}

// Cursor returns how far agent has acked its inbox.
func (d *Daemon) Cursor(agent string) int64 {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.cursors[agent]
}

type agentKey struct{}

func (d *Daemon) serveHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/mcp" && r.URL.Path != "/mcp"+tools.GatePath {
		http.NotFound(w, r)
		return
	}
	token, _ := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	d.mu.Lock()
	agent := d.tokens[token]
	d.mu.Unlock()
	if token == "" || agent == "" {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusUnauthorized)
		fmt.Fprintln(w, `{"error":"missing or unknown bearer token","code":"unauthorized"}`)
		return
	}
	if r.URL.Path == "/mcp"+tools.GatePath {
		d.serveGate(w, r, agent)
		return
	}
	d.mcp.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), agentKey{}, agent)))
}

// serveGate answers the gate as the daemon does: with Gate's decision for
// the token's agent, every call allowed while Gate is nil.
func (d *Daemon) serveGate(w http.ResponseWriter, r *http.Request, agent string) {
	var call tools.GateCall
	if err := json.NewDecoder(r.Body).Decode(&call); err != nil || call.Tool == "" {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		fmt.Fprintln(w, `{"error":"the gate takes a JSON object {tool, command, path}","code":"invalid"}`)
		return
	}
	d.mu.Lock()
	gate := d.Gate
	d.mu.Unlock()
	out := tools.GateDecision{Allowed: true}
	if gate != nil {
		out = gate(agent, call)
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(out)
}

func (d *Daemon) serverFor(r *http.Request) *mcp.Server {
	agent, _ := r.Context().Value(agentKey{}).(string)
	if agent == "" {
		return nil
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	srv := d.servers[agent]
	if srv == nil {
		srv = mcp.NewServer(&mcp.Implementation{Name: "agent-worker-fake", Version: "test"}, nil)
		d.addTools(srv, agent)
		d.servers[agent] = srv
	}
	return srv
}

func (d *Daemon) addMember(name string) {
	if name != "user" && name != "system" && !slices.Contains(d.members, name) {
		d.members = append(d.members, name)
	}
}

// append writes a message; d.mu must be held.
func (d *Daemon) append(from, content, to, kind string) worker.Message {
	d.addMember(from)
	mentions := d.mentions(content, from)
	if to != "" {
		d.addMember(to)
		if !slices.Contains(mentions, to) {
			mentions = append(mentions, to)
		}
	}
	m := worker.Message{
		Seq: int64(len(d.messages) + 1), Workflow: d.Workflow, Tag: d.Tag,
		From: from, Content: content, Kind: kind, To: to, Mentions: mentions, CreatedAt: d.now(),
	}
	m.ID = fmt.Sprintf("msg_%d", m.Seq)
	d.messages = append(d.messages, m)
	return m
}

// mentions parses content as the daemon does (SPEC.md "Mentions"), except
// that every well-formed name counts and joins the team.
func (d *Daemon) mentions(content, sender string) []string {
	out := []string{}
	add := func(n string) {
		if n != sender && !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	for i := 0; i < len(content); i++ {
		if content[i] != '@' || (i > 0 && !boundary(content[i-1])) {
			continue
		}
		j := i + 1
		for j < len(content) && nameByte(content[j]) {
			j++
		}
		name := content[i+1 : j]
		if !slices.Contains(d.members, name) {
			name = strings.TrimRight(name, "-_") // punctuation, unless a member's name ends so
		}
		i = j - 1
		switch {
		case name == "all":
			for _, m := range d.members {
				add(m)
			}
		case namePattern.MatchString(name):
			d.addMember(name)
			add(name)
		}
	}
	return out
}

func nameByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-'
}

func boundary(c byte) bool { return !nameByte(c) && c != '.' && c != '@' }

// visible reports whether agent may see m: a direct message only to its two
// ends.
func visible(m worker.Message, agent string) bool {
	return m.To == "" || m.From == agent || m.To == agent
}

// tool registers a handler that runs under d.mu and is recorded in Calls.
func tool[In, Out any](d *Daemon, srv *mcp.Server, name string, fn func(in In) (Out, string, error)) {
	mcp.AddTool(srv, &mcp.Tool{Name: name, Description: "fake agent-worker " + name},
		func(_ context.Context, _ *mcp.CallToolRequest, in In) (*mcp.CallToolResult, Out, error) {
			d.mu.Lock()
			defer d.mu.Unlock()
			d.calls = append(d.calls, name)
			out, text, err := fn(in)
			if err != nil {
				return nil, out, err
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: text}}}, out, nil
		})
}

// addTools registers the fake of every daemon tool for agent me, grouped
// as host/mcpserver groups the real ones.
func (d *Daemon) addTools(srv *mcp.Server, me string) {
	d.addChannelTools(srv, me)
	d.addInboxTools(srv, me)
	d.addPresenceTools(srv, me)
	d.addDocTools(srv, me)
	d.addProposalTools(srv, me)
	d.addResourceTools(srv, me)
	d.addAgentTools(srv, me)
	d.addWorktreeTools(srv, me)
	d.addEffortTools(srv, me)
	d.addTaskTools(srv, me)
	d.addQuestionTools(srv, me)
	d.addSearchTools(srv, me)
}

// addQuestionTools registers the fake of ask_user: the question is a system
// line in the channel, as the daemon posts it, and stays pending.
func (d *Daemon) addQuestionTools(srv *mcp.Server, me string) {
	tool(d, srv, tools.AskUser, func(in tools.AskUserArgs) (tools.Question, string, error) {
		if strings.TrimSpace(in.Question) == "" {
			return tools.Question{}, "", fmt.Errorf("question is empty: write what you need the owner to decide")
		}
		d.questions++
		q := tools.Question{ID: fmt.Sprintf("q_%d", d.questions), Agent: me + "@" + d.Workflow + ":" + d.Tag, Kind: "question",
			Question: in.Question, Options: append([]string{}, in.Options...), Context: in.Context, State: "pending", CreatedAt: d.now()}
		d.append("system", me+" asks the owner ("+q.ID+"): "+in.Question, "", "system")
		return q, "asked the owner as " + q.ID, nil
	})
	// The fake's owner approves every action at once.
	tool(d, srv, tools.ApprovalWait, func(in tools.ApprovalArgs) (tools.ApprovalResult, string, error) {
		if strings.TrimSpace(in.Action) == "" {
			return tools.ApprovalResult{}, "", fmt.Errorf("action is empty: write the exact action")
		}
		d.append("system", me+" was approved: "+in.Action, "", "system")
		return tools.ApprovalResult{Approved: true}, "approved: " + in.Action, nil
	})
}

// addChannelTools registers the fakes of channel_send and channel_read.
func (d *Daemon) addChannelTools(srv *mcp.Server, me string) {
	tool(d, srv, tools.ChannelSend, func(in tools.SendArgs) (tools.SendResult, string, error) {
		if strings.TrimSpace(in.Message) == "" {
			return tools.SendResult{}, "", errors.New("message is empty: write something")
		}
		if in.To != "" && !namePattern.MatchString(in.To) {
			return tools.SendResult{}, "", fmt.Errorf("to: %q is not a member", in.To)
		}
		if in.To == me {
			return tools.SendResult{}, "", errors.New("to: you cannot send a direct message to yourself")
		}
		m := d.append(me, in.Message, in.To, "message")
		return tools.SendResult{Seq: m.Seq, ID: m.ID, Mentions: m.Mentions, To: m.To}, fmt.Sprintf("sent as #%d", m.Seq), nil
	})

	tool(d, srv, tools.ChannelRead, func(in tools.ReadArgs) (tools.MessagesResult, string, error) {
		if in.Limit < 0 || in.Limit > 200 {
			return tools.MessagesResult{}, "", errors.New("limit must be between 1 and 200")
		}
		limit := cmp.Or(in.Limit, 50)
		var ms []worker.Message
		for _, m := range d.messages {
			if m.Seq > in.SinceSeq && visible(m, me) {
				ms = append(ms, m)
			}
		}
		if in.SinceSeq > 0 && len(ms) > limit {
			ms = ms[:limit]
		} else if len(ms) > limit {
			ms = ms[len(ms)-limit:]
		}
		ms = append([]worker.Message{}, ms...)
		return tools.MessagesResult{Messages: ms, Count: len(ms)}, fmt.Sprintf("%d messages", len(ms)), nil
	})
}

// addInboxTools registers the fakes of my_inbox and my_inbox_ack.
func (d *Daemon) addInboxTools(srv *mcp.Server, me string) {
	tool(d, srv, tools.MyInbox, func(tools.NoArgs) (tools.InboxResult, string, error) {
		out := tools.InboxResult{Messages: []worker.Message{}}
		for _, m := range d.messages {
			if m.Seq > d.cursors[me] && m.From != me && slices.Contains(m.Mentions, me) {
				out.Messages = append(out.Messages, m)
				out.NewestSeq = m.Seq
			}
		}
		out.Count = len(out.Messages)
		return out, fmt.Sprintf("%d unread (newest_seq %d)", out.Count, out.NewestSeq), nil
	})

	tool(d, srv, tools.MyInboxAck, func(in tools.AckArgs) (tools.AckResult, string, error) {
		d.cursors[me] = max(d.cursors[me], in.UntilSeq)
		return tools.AckResult{Cursor: d.cursors[me]}, fmt.Sprintf("inbox read up to #%d", d.cursors[me]), nil
	})
}

// addPresenceTools registers the fakes of my_status_set and team_members.
func (d *Daemon) addPresenceTools(srv *mcp.Server, me string) {
	tool(d, srv, tools.MyStatusSet, func(in tools.StatusArgs) (tools.StatusResult, string, error) {
		if in.State == nil && in.Task == nil {
			return tools.StatusResult{}, "", errors.New("give state, task or both")
		}
		s := d.statuses[me]
		if in.State != nil {
			s.State = *in.State
		}
		if in.Task != nil {
			s.Task = *in.Task
		}
		d.statuses[me] = s
		return tools.StatusResult(s), "status updated", nil
	})

	tool(d, srv, tools.TeamMembers, func(tools.NoArgs) (tools.MembersResult, string, error) {
		out := tools.MembersResult{Members: []worker.Member{}}
		for _, n := range slices.Sorted(slices.Values(d.members)) {
			s := d.statuses[n]
			out.Members = append(out.Members, worker.Member{Name: n, Backend: "fake", State: "idle", Status: s.State, Task: s.Task, You: n == me})
		}
		out.Count = len(out.Members)
		return out, fmt.Sprintf("%d members", out.Count), nil
	})
}

// addDocTools registers the fakes of the team_doc_* tools.
func (d *Daemon) addDocTools(srv *mcp.Server, me string) {
	tool(d, srv, tools.TeamDocRead, func(in tools.DocArgs) (tools.DocResult, string, error) {
		file, err := docName(in.File)
		if err != nil {
			return tools.DocResult{}, "", err
		}
		c, ok := d.contents[file]
		if !ok && file != "notes.md" {
			return tools.DocResult{}, "", fmt.Errorf("document %s not found: team_doc_list shows the documents", file)
		}
		return tools.DocResult{File: file, Content: c}, cmp.Or(c, "(empty document)"), nil
	})

	tool(d, srv, tools.TeamDocWrite, func(in tools.DocWriteArgs) (tools.DocWritten, string, error) {
		file, err := docName(in.File)
		if err != nil {
			return tools.DocWritten{}, "", err
		}
		d.putDoc(file, in.Content)
		return tools.DocWritten{File: file}, "wrote " + file, nil
	})

	tool(d, srv, tools.TeamDocAppend, func(in tools.DocWriteArgs) (tools.DocWritten, string, error) {
		file, err := docName(in.File)
		if err != nil {
			return tools.DocWritten{}, "", err
		}
		d.putDoc(file, d.contents[file]+in.Content)
		return tools.DocWritten{File: file}, "appended to " + file, nil
	})

	tool(d, srv, tools.TeamDocCreate, func(in tools.DocCreateArgs) (tools.DocWritten, string, error) {
		file, err := docName(in.File)
		if err != nil || in.File == "" {
			return tools.DocWritten{}, "", cmp.Or(err, errors.New("file is required"))
		}
		if _, ok := d.contents[file]; ok {
			return tools.DocWritten{}, "", fmt.Errorf("document already exists: %s (use team_doc_write to replace it)", file)
		}
		d.putDoc(file, in.Content)
		return tools.DocWritten{File: file}, "created " + file, nil
	})

	tool(d, srv, tools.TeamDocList, func(tools.NoArgs) (tools.DocListResult, string, error) {
		out := tools.DocListResult{Documents: []tools.DocumentInfo{}}
		for _, p := range slices.Sorted(maps.Keys(d.docs)) {
			out.Documents = append(out.Documents, d.docs[p])
		}
		out.Count = len(out.Documents)
		return out, fmt.Sprintf("%d documents", out.Count), nil
	})
}

// addProposalTools registers the fakes of the proposal and vote tools.
func (d *Daemon) addProposalTools(srv *mcp.Server, me string) {
	tool(d, srv, tools.TeamProposalCreate, func(in tools.ProposalArgs) (tools.Proposal, string, error) {
		p, err := d.newProposal(me, in)
		if err != nil {
			return tools.Proposal{}, "", err
		}
		d.proposals = append(d.proposals, p)
		d.append("system", fmt.Sprintf("%s opened proposal %s %q: options %s", me, p.ID, p.Title, strings.Join(p.Options, ", ")), "", "system")
		return view(p), "opened " + p.ID, nil
	})

	tool(d, srv, tools.TeamVote, func(in tools.VoteArgs) (tools.Proposal, string, error) {
		p, err := d.proposal(in.Proposal)
		if err != nil {
			return tools.Proposal{}, "", err
		}
		if p.State != "active" {
			return tools.Proposal{}, "", fmt.Errorf("proposal %s is %s: voting is closed", p.ID, p.State)
		}
		if !slices.Contains(p.Options, in.Choice) {
			return tools.Proposal{}, "", fmt.Errorf("choice %q is not an option of %s: choose one of %s", in.Choice, p.ID, strings.Join(p.Options, ", "))
		}
		p.Votes = slices.DeleteFunc(p.Votes, func(v tools.Vote) bool { return v.Voter == me })
		p.Votes = append(p.Votes, tools.Vote{Voter: me, Choice: in.Choice, Reason: in.Reason})
		resolve(p)
		if p.State == "resolved" {
			d.append("system", fmt.Sprintf("proposal %s resolved: %s", p.ID, p.Winner), "", "system")
		}
		return view(p), fmt.Sprintf("%s: %s, %d of %d votes", p.ID, p.State, len(p.Votes), p.Quorum), nil
	})

	tool(d, srv, tools.TeamProposalStatus, func(in tools.ProposalRefArgs) (tools.ProposalsResult, string, error) {
		out := tools.ProposalsResult{Proposals: []tools.Proposal{}}
		if in.Proposal != "" {
			p, err := d.proposal(in.Proposal)
			if err != nil {
				return out, "", err
			}
			out.Proposals = append(out.Proposals, view(p))
		} else {
			for _, p := range d.proposals {
				if p.State == "active" {
					out.Proposals = append(out.Proposals, view(p))
				}
			}
		}
		out.Count = len(out.Proposals)
		return out, fmt.Sprintf("%d proposals", out.Count), nil
	})

	tool(d, srv, tools.TeamProposalCancel, func(in tools.CancelArgs) (tools.Proposal, string, error) {
		p, err := d.proposal(in.Proposal)
		if err != nil {
			return tools.Proposal{}, "", err
		}
		if p.Creator != me {
			return tools.Proposal{}, "", fmt.Errorf("only %s, who created %s, can cancel it", p.Creator, p.ID)
		}
		if p.State != "active" {
			return tools.Proposal{}, "", fmt.Errorf("proposal %s is already %s", p.ID, p.State)
		}
		p.State = "cancelled"
		return view(p), "cancelled " + p.ID, nil
	})
}

// addResourceTools registers the fakes of resource_create and resource_read.
func (d *Daemon) addResourceTools(srv *mcp.Server, me string) {
	tool(d, srv, tools.ResourceCreate, func(in tools.ResourceArgs) (resource, string, error) {
		typ := cmp.Or(in.Type, "text")
		if !slices.Contains([]string{"markdown", "json", "text", "diff"}, typ) {
			return resource{}, "", fmt.Errorf("type %q: use markdown, json, text or diff", in.Type)
		}
		r := resource{ID: fmt.Sprintf("res_%016x", len(d.resources)+1), Type: typ, Content: in.Content, From: me}
		d.resources[r.ID] = r
		return resource{ID: r.ID, Type: r.Type}, fmt.Sprintf("stored as %s", r.ID), nil
	})

	tool(d, srv, tools.ResourceRead, func(in tools.ResourceReadArgs) (resource, string, error) {
		r, ok := d.resources[in.ID]
		if !ok {
			return resource{}, "", fmt.Errorf("resource %s not found", in.ID)
		}
		return r, r.Content, nil
	})
}

var docPattern = regexp.MustCompile(`^[A-Za-z0-9._/-]+\.(md|txt|json|yaml)$`)

// docName applies the daemon's document name rules; "" is notes.md.
func docName(f string) (string, error) {
	if f == "" {
		return "notes.md", nil
	}
	if !docPattern.MatchString(f) || strings.HasPrefix(f, "/") || slices.Contains(strings.Split(f, "/"), "..") {
		return "", fmt.Errorf("document name %q: use a relative path of letters, digits and ._-/ ending in .md, .txt, .json or .yaml", f)
	}
	return f, nil
}

func (d *Daemon) putDoc(file, content string) {
	d.contents[file] = content
	d.docs[file] = worker.Document{Path: file, Size: int64(len(content)), UpdatedAt: d.now()}
}

func (d *Daemon) proposal(id string) (*tools.Proposal, error) {
	for _, p := range d.proposals {
		if p.ID == id {
			return p, nil
		}
	}
	return nil, fmt.Errorf("proposal %s not found: team_proposal_status lists the active ones", id)
}

func (d *Daemon) newProposal(me string, in tools.ProposalArgs) (*tools.Proposal, error) {
	if !slices.Contains([]string{"election", "decision", "approval", "assignment"}, in.Type) {
		return nil, fmt.Errorf("type %q: use election, decision, approval or assignment", in.Type)
	}
	if strings.TrimSpace(in.Title) == "" {
		return nil, errors.New("title is empty: say what to decide")
	}
	opts := in.Options
	if len(opts) == 0 && in.Type == "approval" {
		opts = []string{"approve", "reject"}
	}
	if len(opts) < 2 {
		return nil, errors.New("options: give at least two choices")
	}
	res := cmp.Or(in.Resolution, "plurality")
	if !slices.Contains([]string{"plurality", "majority", "unanimous", "creator-decides"}, res) {
		return nil, fmt.Errorf("resolution %q: use plurality, majority, unanimous or creator-decides", in.Resolution)
	}
	expires := time.Hour
	if in.ExpiresIn != "" {
		var err error
		if expires, err = time.ParseDuration(in.ExpiresIn); err != nil || expires <= 0 {
			return nil, fmt.Errorf("expires_in %q is not a duration: write e.g. 30m or 2h", in.ExpiresIn)
		}
	}
	return &tools.Proposal{
		ID: fmt.Sprintf("prop-%d", len(d.proposals)+1), Type: in.Type, Title: in.Title, Creator: me,
		Options: opts, Resolution: res, Quorum: cmp.Or(in.Quorum, len(d.members)), Binding: in.Binding,
		State: "active", Votes: []tools.Vote{}, ExpiresAt: d.now().Add(expires),
	}, nil
}

// view copies p for a result, which the SDK encodes after the lock is
// released.
func view(p *tools.Proposal) tools.Proposal {
	v := *p
	v.Options, v.Votes = slices.Clone(p.Options), slices.Clone(p.Votes)
	return v
}

// resolve decides p once it has its quorum of votes.
func resolve(p *tools.Proposal) {
	if len(p.Votes) < p.Quorum {
		return
	}
	count := map[string]int{}
	for _, v := range p.Votes {
		count[v.Choice]++
	}
	top, tie := "", false
	for _, o := range p.Options {
		switch {
		case top == "" || count[o] > count[top]:
			top, tie = o, false
		case count[o] == count[top]:
			tie = true
		}
	}
	switch {
	case p.Resolution == "majority" && 2*count[top] <= len(p.Votes),
		p.Resolution == "unanimous" && count[top] != len(p.Votes),
		p.Resolution == "creator-decides" && tie:
		return
	}
	p.State, p.Winner = "resolved", top
}

// addAgentTools registers the fakes of agent_spawn and agent_stop: a
// spawned agent joins the member list and agent_stop takes it out; any
// caller may spawn (the real daemon checks can_spawn).
func (d *Daemon) addAgentTools(srv *mcp.Server, me string) {
	tool(d, srv, tools.AgentSpawn, func(in tools.SpawnArgs) (tools.SpawnResult, string, error) {
		if in.Name == "" || slices.Contains(d.members, in.Name) {
			return tools.SpawnResult{}, "", fmt.Errorf("agent %q already exists or is empty: pick another name", in.Name)
		}
		d.members = append(d.members, in.Name)
		d.append("system", fmt.Sprintf("%s spawned %s", me, in.Name), "", "system")
		return tools.SpawnResult{Name: in.Name, Backend: cmp.Or(in.Backend, "mock"), Model: in.Model}, "spawned " + in.Name, nil
	})

	tool(d, srv, tools.AgentStop, func(in tools.StopArgs) (tools.StopResult, string, error) {
		i := slices.Index(d.members, in.Name)
		if i < 0 {
			return tools.StopResult{}, "", fmt.Errorf("no agent %q", in.Name)
		}
		d.members = slices.Delete(d.members, i, i+1)
		return tools.StopResult{Name: in.Name, State: "stopped"}, "stopped " + in.Name, nil
	})
}

// addTaskTools registers the fakes of the task board's tools: the states,
// dependencies, assignees and holder checks of the real board.
func (d *Daemon) addTaskTools(srv *mcp.Server, me string) {
	tool(d, srv, tools.TaskCreate, func(in tools.TaskCreateArgs) (tools.Task, string, error) {
		if strings.TrimSpace(in.Title) == "" {
			return tools.Task{}, "", errors.New("title is empty: say in a line what is to be done")
		}
		for _, dep := range in.DependsOn {
			if _, err := d.task(dep); err != nil {
				return tools.Task{}, "", fmt.Errorf("depends_on: %w", err)
			}
		}
		now := d.now()
		t := &tools.Task{ID: fmt.Sprintf("task-%d", len(d.tasks)+1), Title: in.Title, Description: in.Description,
			Priority: in.Priority, State: "pending", DependsOn: append([]string{}, in.DependsOn...), Parent: in.Parent,
			Assignee: in.Assignee, Role: in.Role, CreatedBy: me, MaxRetries: 2, CreatedAt: now, UpdatedAt: now}
		d.tasks = append(d.tasks, t)
		return d.taskView(t), "created " + t.ID, nil
	})

	tool(d, srv, tools.TaskList, func(in tools.TaskListArgs) (tools.TasksResult, string, error) {
		out := tools.TasksResult{Tasks: []tools.Task{}}
		for _, t := range d.tasks {
			if (in.State == "" || t.State == in.State) && (in.Assignee == "" || t.Assignee == in.Assignee) {
				out.Tasks = append(out.Tasks, d.taskView(t))
			}
		}
		out.Count = len(out.Tasks)
		return out, fmt.Sprintf("%d tasks", out.Count), nil
	})

	tool(d, srv, tools.TaskClaim, func(in tools.TaskClaimArgs) (tools.Task, string, error) {
		var t *tools.Task
		if in.ID == "" {
			// As the daemon picks: assigned to me first, then by priority, then oldest.
			better := func(c, t *tools.Task) bool {
				if mine := c.Assignee == me; mine != (t.Assignee == me) {
					return mine
				}
				return c.Priority > t.Priority
			}
			for _, c := range d.tasks {
				if d.taskView(c).Ready && (c.Assignee == "" || c.Assignee == me) && c.Role == "" && (t == nil || better(c, t)) {
					t = c
				}
			}
			if t == nil {
				return tools.Task{}, "", errors.New("no task is ready for you: task_list shows the board")
			}
		} else {
			var err error
			if t, err = d.task(in.ID); err != nil {
				return tools.Task{}, "", err
			}
			switch v := d.taskView(t); {
			case t.State == "claimed" || t.State == "in_progress":
				return tools.Task{}, "", fmt.Errorf("%s is already claimed by %s", t.ID, t.Holder)
			case t.Assignee != "" && t.Assignee != me:
				return tools.Task{}, "", fmt.Errorf("%s is assigned to %s", t.ID, t.Assignee)
			case !v.Ready:
				return tools.Task{}, "", fmt.Errorf("%s is %s and waits for %s", t.ID, t.State, strings.Join(v.WaitingOn, ", "))
			}
		}
		t.State, t.Holder, t.UpdatedAt = "claimed", me, d.now()
		return d.taskView(t), "claimed " + t.ID, nil
	})

	held := func(id, what string) (*tools.Task, error) {
		t, err := d.task(id)
		switch {
		case err != nil:
			return nil, err
		case t.State != "claimed" && t.State != "in_progress":
			return nil, fmt.Errorf("%s is %s, not held: claim it with task_claim first", t.ID, t.State)
		case t.Holder != me:
			return nil, fmt.Errorf("%s is held by %s: only the holder may %s it", t.ID, t.Holder, what)
		}
		t.UpdatedAt = d.now()
		return t, nil
	}

	tool(d, srv, tools.TaskProgress, func(in tools.TaskProgressArgs) (tools.Task, string, error) {
		t, err := held(in.ID, "record progress on")
		if err != nil {
			return tools.Task{}, "", err
		}
		t.State, t.Percent = "in_progress", in.Percent
		return d.taskView(t), "noted", nil
	})

	tool(d, srv, tools.TaskComplete, func(in tools.TaskCompleteArgs) (tools.Task, string, error) {
		t, err := held(in.ID, "complete")
		if err != nil {
			return tools.Task{}, "", err
		}
		t.State, t.Result, t.Artifacts = "completed", in.Result, slices.Clone(in.Artifacts)
		return d.taskView(t), "completed " + t.ID, nil
	})

	tool(d, srv, tools.TaskFail, func(in tools.TaskFailArgs) (tools.Task, string, error) {
		t, err := held(in.ID, "fail")
		if err != nil {
			return tools.Task{}, "", err
		}
		t.Error = in.Reason
		if in.Retry && t.Retries < t.MaxRetries {
			t.State, t.Holder = "pending", ""
			t.Retries++
		} else {
			t.State = "failed"
		}
		return d.taskView(t), t.ID + " " + t.State, nil
	})

	tool(d, srv, tools.TaskRelease, func(in tools.TaskRefArgs) (tools.Task, string, error) {
		t, err := held(in.ID, "release")
		if err != nil {
			return tools.Task{}, "", err
		}
		t.State, t.Holder = "pending", ""
		return d.taskView(t), "released " + t.ID, nil
	})

	// The fake agents have no roles: a task with a role is nobody's here.
	tool(d, srv, tools.TaskCancel, func(in tools.TaskCancelArgs) (tools.Task, string, error) {
		t, err := d.task(in.ID)
		if err != nil {
			return tools.Task{}, "", err
		}
		if strings.TrimSpace(in.Reason) == "" {
			return tools.Task{}, "", errors.New("reason is empty: say why the task is no longer wanted")
		}
		if t.State == "completed" || t.State == "failed" || t.State == "cancelled" {
			return tools.Task{}, "", fmt.Errorf("%s is already %s, so it cannot be cancelled", t.ID, t.State)
		}
		var cancel func(t *tools.Task)
		cancel = func(t *tools.Task) {
			t.State, t.Error = "cancelled", in.Reason
			for _, c := range d.tasks {
				if c.Parent == t.ID && c.State != "completed" && c.State != "failed" && c.State != "cancelled" {
					cancel(c)
				}
			}
		}
		cancel(t)
		return d.taskView(t), "cancelled " + t.ID, nil
	})

	tool(d, srv, tools.MyTasks, func(tools.NoArgs) (tools.MyTasksResult, string, error) {
		out := tools.MyTasksResult{Held: []tools.Task{}, Claimable: []tools.Task{}, Roles: []string{}}
		for _, t := range d.tasks {
			v := d.taskView(t)
			switch {
			case (t.State == "claimed" || t.State == "in_progress") && t.Holder == me:
				out.Held = append(out.Held, v)
			case v.Ready && (t.Assignee == "" || t.Assignee == me) && t.Role == "":
				out.Claimable = append(out.Claimable, v)
			}
		}
		return out, fmt.Sprintf("%d held, %d claimable", len(out.Held), len(out.Claimable)), nil
	})
}

func (d *Daemon) task(id string) (*tools.Task, error) {
	for _, t := range d.tasks {
		if t.ID == id {
			return t, nil
		}
	}
	return nil, fmt.Errorf("task %s not found: task_list shows the board", id)
}

// taskView copies t for a result, with what it waits for worked out.
func (d *Daemon) taskView(t *tools.Task) tools.Task {
	v := *t
	v.DependsOn, v.WaitingOn = slices.Clone(t.DependsOn), nil
	for _, dep := range t.DependsOn {
		if x, err := d.task(dep); err == nil && x.State != "completed" {
			v.WaitingOn = append(v.WaitingOn, dep)
		}
	}
	v.Ready = v.State == "pending" && len(v.WaitingOn) == 0
	return v
}

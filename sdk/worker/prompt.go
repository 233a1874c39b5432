package worker

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/agent-worker/agent-worker/sdk/backend"
	"github.com/agent-worker/agent-worker/sdk/tools"
)

// RecentLimit is how many channel messages a run is shown as recent
// activity.
const RecentLimit = tools.RecentLimit

// recentChars cuts each recent-activity line, so that a chatty channel
// cannot crowd the inbox out of the prompt; inbox messages stay whole.
const recentChars = 300

// Context is everything a run's prompt is built from.
type Context struct {
	Agent      backend.Agent
	Inbox      []Message
	Recent     []Message
	Document   string // notes.md
	Documents  []Document
	ProjectDir string
	// Repos are the workspace's further repositories (req.Repos), listed
	// after the project directory so the run knows the names its tools'
	// repo argument takes.
	Repos   []backend.Repo
	Attempt int
	// Effort is the agent's active effort where it stands; nil: none.
	Effort *tools.EffortContext
}

// Fetch gathers a run's context: the inbox, the latest RecentLimit channel
// messages, notes.md and the document list. A daemon that sends them with
// the request (req.RunContext) spares the round trips, and then c is not
// used and may be nil; from an older daemon Fetch reads them through c.
// Either way c's NewestSeq is the newest inbox message the run is shown.
func Fetch(ctx context.Context, c *Client, req backend.Request) (Context, error) {
	wc := Context{Agent: req.Agent, ProjectDir: req.ProjectDir, Repos: req.Repos, Attempt: req.Attempt}
	if rc := req.RunContext; rc != nil {
		wc.Inbox, wc.Recent, wc.Document, wc.Documents = rc.Inbox.Messages, rc.Recent, rc.Notes, rc.Documents
		wc.Effort = rc.Effort
		if c != nil {
			c.newestSeq.Store(rc.Inbox.NewestSeq)
		}
		return wc, nil
	}
	if c == nil {
		return Context{}, errors.New("fetch run context: the request carries none and there is no daemon connection")
	}
	var err error
	if wc.Inbox, err = c.Inbox(ctx); err != nil {
		return Context{}, fmt.Errorf("fetch inbox: %w", err)
	}
	if wc.Recent, err = c.Read(ctx, 0, RecentLimit); err != nil {
		return Context{}, fmt.Errorf("fetch channel: %w", err)
	}
	if wc.Document, err = c.DocRead(ctx, ""); err != nil {
		return Context{}, fmt.Errorf("fetch notes.md: %w", err)
	}
	if wc.Documents, err = c.DocList(ctx); err != nil {
		return Context{}, fmt.Errorf("fetch document list: %w", err)
	}
	return wc, nil
}

// BuildPrompt renders c as the user prompt of a run. The agent's system
// prompt is not part of it: backends pass Agent.System separately.
func BuildPrompt(c Context) string {
	var b strings.Builder
	a := c.Agent
	fmt.Fprintf(&b, "You are @%s in team @%s:%s, one of several agents who work together through a shared channel.\n", a.Name, a.Workflow, a.Tag)
	if c.ProjectDir != "" {
		fmt.Fprintf(&b, "Project directory: %s\n", c.ProjectDir)
	}
	if len(c.Repos) > 0 {
		b.WriteString("Repositories (pass repo: NAME to a tool to work in one):\n")
		for _, r := range c.Repos {
			access := "read-only"
			if r.Write {
				access = "writable"
			}
			fmt.Fprintf(&b, "- %s: %s (%s)\n", r.Name, r.Path, access)
		}
	}

	fmt.Fprintf(&b, "\n## Inbox (%d %s for you)\n", len(c.Inbox), plural(len(c.Inbox), "message"))
	if len(c.Inbox) == 0 {
		b.WriteString("No unread messages are addressed to you.\n")
	}
	for _, m := range c.Inbox {
		writeLine(&b, m, a.Name, 0)
	}

	b.WriteString("\n## Recent activity\n")
	if len(c.Recent) == 0 {
		b.WriteString("The channel is quiet. Use channel_read to read its history.\n")
	} else {
		fmt.Fprintf(&b, "The last %d channel %s (use channel_read for more):\n", len(c.Recent), plural(len(c.Recent), "message"))
	}
	for _, m := range c.Recent {
		writeLine(&b, m, a.Name, recentChars)
	}

	doc, others := strings.TrimSpace(c.Document), otherDocuments(c.Documents)
	if doc != "" || len(others) > 0 {
		b.WriteString("\n## Current workspace\n")
	}
	if doc != "" {
		b.WriteString("The team's shared document notes.md (read with team_doc_read, add with team_doc_append):\n\n")
		b.WriteString(doc)
		b.WriteString("\n")
	}
	if len(others) > 0 {
		if doc != "" {
			b.WriteString("\n")
		}
		b.WriteString("Other shared documents (read them with team_doc_read):\n")
		for i, d := range others {
			if i == maxListedDocuments {
				fmt.Fprintf(&b, "- and %d more (team_doc_list lists them all)\n", len(others)-i)
				break
			}
			fmt.Fprintf(&b, "- %s (%d bytes)\n", d.Path, d.Size)
		}
	}

	if e := c.Effort; e != nil {
		writeEffort(&b, e)
	}

	if c.Attempt >= 2 {
		fmt.Fprintf(&b, "\n## Retry\nThis is retry attempt %d: an earlier attempt to handle these messages failed. "+
			"Check the channel and documents for work already done, and don't repeat messages you already sent.\n", c.Attempt)
	}

	b.WriteString(`
## Instructions
- Handle the messages in your inbox. Your replies reach no one unless you post them.
- Talk with channel_send. Mention teammates as @name to put a message in their inbox and wake them (@all wakes everyone); set ` + "`to`" + ` for a direct message. A message without a mention wakes no one.
- Share longer work in documents (team_doc_read, team_doc_append, team_doc_write) and large content with resource_create; team_members shows who is on the team.
- You don't need to call my_inbox_ack: the daemon marks these messages read when this run succeeds, and shows them again if it fails.
- Stop as soon as the messages are handled. Don't wait for replies (you are woken when someone mentions you), don't mention teammates only to thank or acknowledge them, and if there is nothing to do, end without sending anything.
`)
	return b.String()
}

// InboxText renders only c's inbox, one message a line as BuildPrompt
// shows it: what a run was asked, for a backend that remembers its
// earlier runs.
func InboxText(c Context) string {
	if len(c.Inbox) == 0 {
		return "No unread messages were addressed to you.\n"
	}
	var b strings.Builder
	for _, m := range c.Inbox {
		writeLine(&b, m, c.Agent.Name, 0)
	}
	return b.String()
}

// writeLine renders one message as "- #seq [HH:MM:SS] From @x [DM]: text",
// cutting the text to max runes when max > 0 and indenting continuation
// lines so the list stays a list.
func writeLine(b *strings.Builder, m Message, me string, max int) {
	from := "@" + m.From
	if m.From == "user" || m.From == "system" {
		from = m.From // not agents: a mention would reach no one
	}
	fmt.Fprintf(b, "- #%d [%s] From %s", m.Seq, m.CreatedAt.Format("15:04:05"), from)
	switch {
	case m.To != "" && m.From == me:
		fmt.Fprintf(b, " [DM to @%s]", m.To)
	case m.To != "":
		b.WriteString(" [DM]")
	}
	if m.Kind != "" && m.Kind != "message" {
		fmt.Fprintf(b, " [%s]", m.Kind)
	}
	text := m.Content
	if r := []rune(text); max > 0 && len(r) > max {
		text = string(r[:max]) + "…"
	}
	b.WriteString(": ")
	b.WriteString(strings.ReplaceAll(strings.TrimRight(text, "\n"), "\n", "\n  "))
	b.WriteString("\n")
}

// maxListedDocuments bounds the document list in a prompt, so that a team
// with many documents does not crowd out its messages.
const maxListedDocuments = 30

// otherDocuments is the document list without notes.md, which the prompt
// shows whole.
func otherDocuments(docs []Document) []Document {
	var out []Document
	for _, d := range docs {
		if d.Path != "notes.md" {
			out = append(out, d)
		}
	}
	return out
}

func plural(n int, word string) string {
	if n == 1 {
		return word
	}
	return word + "s"
}

// Prompt is what a backend that hands the whole turn to a CLI needs: the
// run's prompt, built from the context the request carries. From an older
// daemon that sends none, it connects as the run's agent, fetches the
// context and closes the connection (the CLI opens its own); an
// unreachable daemon then fails here, before a CLI runs without its tools.
func Prompt(ctx context.Context, req backend.Request) (string, error) {
	if req.RunContext != nil {
		wc, err := Fetch(ctx, nil, req)
		return BuildPrompt(wc), err
	}
	c, err := Connect(ctx, req.Daemon)
	if err != nil {
		return "", err
	}
	defer c.Close()
	wc, err := Fetch(ctx, c, req)
	if err != nil {
		return "", err
	}
	return BuildPrompt(wc), nil
}

// writeEffort renders the agent's active effort: where it was left, the
// phase to work on with what it takes to leave it, the notes so far and
// the directive files new to it, so that a run picks the effort up at its
// phase, not from the start.
func writeEffort(b *strings.Builder, e *tools.EffortContext) {
	b.WriteString("\n## Effort\n")
	fmt.Fprintf(b, "You are walking skill %s over %s (effort %s, #%d there).\n", e.Skill, e.Dir, e.Effort, e.Ordinal)
	if e.Here != "" {
		b.WriteString(strings.TrimSpace(e.Here) + "\n")
	}
	if p := e.Phase; p != nil {
		fmt.Fprintf(b, "\nPhase %d of %d: %s\n", p.N, p.Of, p.Name)
		if p.Instructions != "" {
			b.WriteString(p.Instructions + "\n")
		}
		if p.Tools != "" {
			fmt.Fprintf(b, "Tools in this phase: %s\n", p.Tools)
		}
		if len(p.Proof) > 0 {
			fields := make([]string, len(p.Proof))
			for i, f := range p.Proof {
				fields[i] = f.Name + " (" + f.Type + ")"
			}
			fmt.Fprintf(b, "Proof to leave it: %s\n", strings.Join(fields, ", "))
		}
		if len(p.Missing) > 0 {
			fmt.Fprintf(b, "Evidence the daemon has not seen yet in this phase: %s\n", strings.Join(p.Missing, ", "))
		}
	}
	if len(e.Notes) > 0 {
		b.WriteString("\nNotes so far:\n")
		for _, n := range e.Notes {
			fmt.Fprintf(b, "- %s: %s\n", n.Phase, strings.ReplaceAll(strings.TrimSpace(n.Notes), "\n", "\n  "))
		}
	}
	for _, d := range e.Directives {
		fmt.Fprintf(b, "\nDirectives from %s:\n%s\n", d.Path, strings.TrimSpace(d.Content))
	}
	if e.Token != "" {
		fmt.Fprintf(b, "\nLeave the phase with effort_continue {token: %q, proof: {...}, notes}; effort_status shows where you are.\n", e.Token)
	}
}

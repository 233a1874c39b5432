package team

import (
	"fmt"
	"strings"

	"github.com/agent-worker/agent-worker/store"
)

// The board's lines in the channel. The store decides what a change did
// (store.TaskNews: which task became ready and who may claim it, why a
// lease was lost, what a failure blocks); Lines says it here, and the
// store writes the lines in the change's own transaction. The service
// announces them after the commit: they mention who a ready task wakes,
// so the scheduler runs them the way it runs any mention and the run sees
// the task in its inbox.

// Lines words the channel lines of the board's and proposals' news for
// the store (store.Lines), which writes them with the change they tell.
type Lines struct{}

var _ store.Lines = Lines{}

// TaskLines is what the channel hears of n, in order.
func (Lines) TaskLines(n store.TaskNews) []store.NewMessage { return taskLines(n) }

// ProposalLine is the channel's line for n.
func (Lines) ProposalLine(n store.ProposalNews) store.NewMessage { return proposalLine(n) }

// taskLines is what the channel hears of n, in order.
func taskLines(n store.TaskNews) []store.NewMessage {
	t := n.Task
	switch n.Kind {
	case store.TaskEventCreated:
		if !t.Ready() {
			return nil
		}
		return []store.NewMessage{readyLine(t, n.Wake, "")}
	case store.TaskEventCompleted:
		// A completion is progress, not chatter: like a human's line it
		// ends the agents' run of messages for the loop guard.
		lines := []store.NewMessage{{Workflow: t.Workflow, Tag: t.Tag, Sender: SenderSystem, Kind: store.KindSystem,
			Content: fmt.Sprintf("%s completed by %s: %s", t.ID, n.By, t.Title)}}
		for _, r := range n.Ready {
			lines = append(lines, readyLine(r.Task, r.Wake, ""))
		}
		return lines
	case store.TaskEventRetried:
		return []store.NewMessage{returnedLine(t, n.Wake, fmt.Sprintf("%s %q failed for %s (%s), retry %d of %d.",
			t.ID, t.Title, n.By, store.OneLine(n.Reason, 300), t.Retries, t.MaxRetries))}
	case store.TaskEventFailed:
		line := fmt.Sprintf("%s %q failed (%s: %s)", t.ID, t.Title, n.By, store.OneLine(n.Reason, 300))
		if n.Retry {
			line += fmt.Sprintf(", after %d retries", t.Retries)
		}
		switch len(n.Blocked) {
		case 0:
		case 1:
			line += fmt.Sprintf("; %s waits for it and cannot start", n.Blocked[0])
		default:
			line += fmt.Sprintf("; %s wait for it and cannot start", strings.Join(n.Blocked, ", "))
		}
		return []store.NewMessage{taskLine(t, line+".", nil)}
	case store.TaskEventCancelled:
		return cancelLines(n)
	case store.TaskEventReleased:
		return []store.NewMessage{returnedLine(t, n.Wake, fmt.Sprintf("%s released %s %q.", n.By, t.ID, t.Title))}
	case store.TaskEventReturned:
		return []store.NewMessage{returnedLine(t, n.Wake, fmt.Sprintf("%s %q went back to pending: %s.", t.ID, t.Title, n.Reason))}
	}
	return nil
}

// returnedLine is the line of a task back on the board: what happened,
// then who may claim it now, or what it waits for.
func returnedLine(t store.Task, wake []string, what string) store.NewMessage {
	if !t.Ready() {
		return taskLine(t, fmt.Sprintf("%s It waits for %s.", what, strings.Join(t.WaitingOn, ", ")), nil)
	}
	return readyLine(t, wake, what)
}

// readyLine tells who may claim a ready task that it can, mentioning
// wake; intro, when set, says first what happened.
func readyLine(t store.Task, wake []string, intro string) store.NewMessage {
	var b strings.Builder
	subject := fmt.Sprintf("%s %q", t.ID, t.Title)
	if intro != "" {
		b.WriteString(intro + " ")
		subject = "it"
		if len(wake) == 0 {
			subject = "It"
		}
	}
	if len(wake) > 0 {
		b.WriteString(mentionAll(wake) + " ")
	}
	b.WriteString(subject + " is ready")
	switch {
	case t.Assignee != "":
		b.WriteString(" for " + t.Assignee)
	case len(wake) == 0:
		b.WriteString(" for anyone")
	}
	if t.Priority != 0 {
		fmt.Fprintf(&b, " (priority %d)", t.Priority)
	}
	fmt.Fprintf(&b, ": claim it with task_claim(%q).", t.ID)
	return taskLine(t, b.String(), wake)
}

// taskLine is a system line about t. It leaves the loop guard's count
// alone: two agents handing each other tasks (created, released, failed,
// lost) must not escape the guard because the board speaks between their
// messages. Only a completion ends the count.
func taskLine(t store.Task, content string, recipients []string) store.NewMessage {
	return store.NewMessage{Workflow: t.Workflow, Tag: t.Tag, Sender: SenderSystem,
		Content: content, Kind: store.KindSystem, Recipients: recipients, KeepStreak: true}
}

// cancelLines are a cancellation's lines: what was cancelled, by whom and
// why, what waited for it and cannot start now, mentioning who is
// concerned (n.Tell: who held a cancelled task, who is behind a blocked
// one) so their next run hears of it; then a parent it left ready.
func cancelLines(n store.TaskNews) []store.NewMessage {
	t := n.Task
	var b strings.Builder
	if len(n.Tell) > 0 {
		b.WriteString(mentionAll(n.Tell) + " ")
	}
	fmt.Fprintf(&b, "%s %q was cancelled by %s: %s", t.ID, t.Title, n.By, store.OneLine(n.Reason, 300))
	if len(n.Cancelled) > 0 {
		ids := make([]string, len(n.Cancelled))
		for i, c := range n.Cancelled {
			ids[i] = c.ID
		}
		fmt.Fprintf(&b, "; its subtasks %s are cancelled with it", strings.Join(ids, ", "))
	}
	switch len(n.Blocked) {
	case 0:
		b.WriteString(".")
	case 1:
		fmt.Fprintf(&b, "; %s waits for it and cannot start: cancel it too, or change the plan.", n.Blocked[0])
	default:
		fmt.Fprintf(&b, "; %s wait for it and cannot start: cancel them too, or change the plan.", strings.Join(n.Blocked, ", "))
	}
	lines := []store.NewMessage{taskLine(t, b.String(), n.Tell)}
	for _, r := range n.Ready {
		lines = append(lines, readyLine(r.Task, r.Wake, ""))
	}
	return lines
}

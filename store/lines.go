package store

import "fmt"

// Lines words the channel lines that tell what a change did. The store
// decides the facts (TaskNews, ProposalNews: who a ready task wakes, who
// hears of a proposal's end) and appends the lines in the change's own
// transaction, so a change never commits without its lines, nor lines
// without their change; the team service (host/team) decides the words,
// and announces the saved lines after the commit, which wakes who they
// mention.
type Lines interface {
	// TaskLines is what the channel hears of n, in order: none for news
	// the channel is not told.
	TaskLines(n TaskNews) []NewMessage
	// ProposalLine is the channel's line for n.
	ProposalLine(n ProposalNews) NewMessage
}

// appendTaskLines appends, inside a change's write, the lines say words
// for news.
func appendTaskLines(conn querier, say Lines, now int64, news ...TaskNews) ([]Message, error) {
	var msgs []Message
	for _, n := range news {
		for _, l := range say.TaskLines(n) {
			m, err := appendMessage(conn, l, now)
			if err != nil {
				return nil, fmt.Errorf("write the channel line of %s (%s): %w", n.Task.ID, n.Kind, err)
			}
			msgs = append(msgs, m)
		}
	}
	return msgs, nil
}

// appendProposalLines appends, inside a write, the line say words for
// each of news.
func appendProposalLines(conn querier, say Lines, now int64, news []ProposalNews) ([]Message, error) {
	msgs := make([]Message, 0, len(news))
	for _, n := range news {
		m, err := appendMessage(conn, say.ProposalLine(n), now)
		if err != nil {
			return nil, fmt.Errorf("write the channel line of %s (%s): %w", n.Proposal.ID, n.Kind, err)
		}
		msgs = append(msgs, m)
	}
	return msgs, nil
}

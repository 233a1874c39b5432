package team

import (
	"fmt"
	"strings"

	"github.com/agent-worker/agent-worker/store"
)

// The proposals' lines in the channel. The store decides what a write did
// to a proposal and who is to hear of it (store.ProposalNews); Lines says
// it here (tasklines.go), the store writes the line in the same write,
// and the service announces it after the commit, which wakes who it names.

// proposalLine is the channel's line for n, into the inboxes of n.Tell.
func proposalLine(n store.ProposalNews) store.NewMessage {
	p := n.Proposal
	var line string
	switch n.Kind {
	case store.ProposalOpened:
		line = fmt.Sprintf("%s opened proposal %s %q (%s, %s, quorum %d): options %s. Vote with team_vote.",
			p.Creator, p.ID, p.Title, p.Type, p.Resolution, p.Quorum, strings.Join(p.Options, ", "))
		if len(n.Tell) > 0 {
			line = mentionAll(n.Tell) + ": " + line
		}
	case store.ProposalVoted:
		line = fmt.Sprintf("%s voted %q on %s (%d/%d votes)", n.By, n.Choice, p.ID, len(p.Votes), p.Quorum)
	case store.ProposalResolved:
		line = fmt.Sprintf("proposal %s resolved: %q wins (%d of %d votes) %s", p.ID, p.Winner, n.WinnerVotes, len(p.Votes), mentionAll(n.Tell))
	case store.ProposalCancelled:
		line = fmt.Sprintf("%s cancelled proposal %s %q", n.By, p.ID, p.Title)
	case store.ProposalExpired:
		line = fmt.Sprintf("proposal %s expired with no winner", p.ID)
		if p.Winner != "" {
			line = fmt.Sprintf("proposal %s expired: %q wins (%d of %d votes)", p.ID, p.Winner, n.WinnerVotes, len(p.Votes))
		}
	}
	return store.NewMessage{Workflow: p.Workflow, Tag: p.Tag, Sender: SenderSystem, Content: line, Kind: store.KindSystem, Recipients: n.Tell}
}

// mentionAll mentions each name: "@a @b".
func mentionAll(names []string) string {
	return "@" + strings.Join(names, " @")
}

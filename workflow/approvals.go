package workflow

import (
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/agent-worker/agent-worker/sdk/backend"
	"github.com/agent-worker/agent-worker/sdk/tools"
)

// approvalKeys are the keys of `approvals:`.
var approvalKeys = []string{"integrate", "spawn", "shell", "tools"}

const approvalsExample = `approvals: {integrate: true, spawn: true, shell: ["git push*"], tools: [team_doc_write]}`

// approvals reads `approvals:` and `approval_timeout:` of an agent or of
// the whole workflow (where names it in messages); both absent is nil.
func (p *parser) approvals(n, timeout *yaml.Node, where string) *backend.ApprovalPolicy {
	if isNull(n) {
		if !isNull(timeout) {
			p.add(timeout, "approval_timeout only applies to actions that approvals: gates: add e.g. %s", approvalsExample)
		}
		return nil
	}
	if n.Kind != yaml.MappingNode {
		p.add(n, "approvals must be a map, e.g. %s", approvalsExample)
		return nil
	}
	fs := p.fields(n, "in approvals of "+where, approvalKeys...)
	a := &backend.ApprovalPolicy{
		Integrate: p.boolean(fs["integrate"], "approvals integrate"),
		Spawn:     p.boolean(fs["spawn"], "approvals spawn"),
	}
	if fs["integrate"] != nil {
		p.integrateSet(a)
	}
	for _, item := range p.plainList(fs["shell"], "approvals shell", `shell: ["git push*", "rm -rf *"]`) {
		if strings.TrimSpace(item.Value) == "" {
			p.add(item, "approvals shell pattern is empty: write e.g. \"git push*\"")
			continue
		}
		a.Shell = append(a.Shell, item.Value)
	}
	for _, item := range p.plainList(fs["tools"], "approvals tools", "tools: [team_doc_write]") {
		if !slices.Contains(tools.Names, item.Value) {
			p.add(item, "approvals tools: %q is not a daemon tool: write one of %s", item.Value, strings.Join(tools.Names, ", "))
			continue
		}
		a.Tools = append(a.Tools, item.Value)
	}
	if d := p.duration(timeout, "approval_timeout", "30m"); d > 0 {
		a.Timeout = d.String()
	}
	return a
}

// workflowApprovals applies the workflow's approvals: to every agent that
// sets none of its own, and its approval_timeout to every agent's
// approvals that name no timeout of their own.
func (p *parser) workflowApprovals(f *File, n, timeout *yaml.Node) {
	var wa *backend.ApprovalPolicy
	if !isNull(n) {
		wa = p.approvals(n, nil, "the workflow")
	}
	wt := p.duration(timeout, "approval_timeout", "30m")
	gated := wa != nil
	// Safe integration by default: in a git workspace without checks:,
	// nothing but a person stands between an agent's branch and the base,
	// so worktree_integrate waits for approval unless approvals: says
	// integrate: false (the agent's own, else the workflow's).
	gateIntegrate := f.Workspace.Unchecked()
	for i := range f.Agents {
		a := &f.Agents[i]
		if a.Approvals == nil && wa != nil {
			a.Approvals = cloneApprovals(wa)
			if p.explicitIntegrate[wa] {
				p.integrateSet(a.Approvals)
			}
		}
		if gateIntegrate && (a.Approvals == nil || !p.explicitIntegrate[a.Approvals]) {
			if a.Approvals == nil {
				a.Approvals = &backend.ApprovalPolicy{}
			}
			a.Approvals.Integrate = true
		}
		if a.Approvals != nil {
			gated = true
			if a.Approvals.Timeout == "" && wt > 0 {
				a.Approvals.Timeout = wt.String()
			}
		}
	}
	if !isNull(timeout) && !gated {
		p.add(timeout, "approval_timeout only applies to actions that approvals: gates: add e.g. %s", approvalsExample)
	}
}

// integrateSet records that a policy's integrate: was written, so the
// default of a git workspace without checks leaves it as written.
func (p *parser) integrateSet(a *backend.ApprovalPolicy) {
	if p.explicitIntegrate == nil {
		p.explicitIntegrate = map[*backend.ApprovalPolicy]bool{}
	}
	p.explicitIntegrate[a] = true
}

// plainList reads a list of plain strings (no ${{ }} variables).
func (p *parser) plainList(n *yaml.Node, name, example string) []*yaml.Node {
	if isNull(n) {
		return nil
	}
	if n.Kind != yaml.SequenceNode {
		p.add(n, "%s must be a list, e.g. %s", name, example)
		return nil
	}
	var out []*yaml.Node
	for _, item := range n.Content {
		item = deref(item)
		if item.Kind != yaml.ScalarNode || isNull(item) {
			p.add(item, "%s items must be strings, e.g. %s", name, example)
			continue
		}
		out = append(out, item)
	}
	return out
}

// cloneApprovals copies a policy, so that agents never share one.
func cloneApprovals(a *backend.ApprovalPolicy) *backend.ApprovalPolicy {
	if a == nil {
		return nil
	}
	out := *a
	out.Shell, out.Tools = slices.Clone(a.Shell), slices.Clone(a.Tools)
	return &out
}

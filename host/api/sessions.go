package api

import (
	"context"
	"net/http"
	"net/url"
)

// HookDelivery is the answer to a HookCall: raw data, from which the hook
// command writes Claude's context (the daemon builds no prompt).
type HookDelivery struct {
	// Agent is the agent the session acts as (its display target).
	Agent    string `json:"agent"`
	Workflow string `json:"workflow"`
	Tag      string `json:"tag"`
	// System is the agent's system prompt and Members its team (SessionStart
	// only).
	System  string   `json:"system,omitempty"`
	Members []Member `json:"members,omitempty"`
	// Messages are the unread messages handed over now, oldest first; they
	// are marked read. Omitted counts older unread ones left out (read
	// too).
	Messages []Message `json:"messages,omitempty"`
	Omitted  int       `json:"omitted,omitempty"`
	// Block (Stop only): messages wait, so Claude should answer them
	// before it stops.
	Block bool `json:"block,omitempty"`
	// Resume (SessionStart) is the dehydration payload of the context
	// window this session continues, from session ResumeFrom.
	Resume     string `json:"resume,omitempty"`
	ResumeFrom string `json:"resume_from,omitempty"`
	// Directives (SessionStart, PostToolUse) are the effort's directive
	// files new to its context.
	Directives []SessionDirective `json:"directives,omitempty"`
}

// Hook is POST /agents/{target}/hook: what `agent-worker hook` calls for
// each Claude Code hook.
func (c *Client) Hook(ctx context.Context, t Target, call HookCall) (HookDelivery, error) {
	var d HookDelivery
	return d, c.do(ctx, http.MethodPost, "/agents/"+url.PathEscape(t.String())+"/hook", call, &d)
}

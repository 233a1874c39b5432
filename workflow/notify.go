package workflow

import (
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/agent-worker/agent-worker/internal/yamlerr"
)

// NotifyEvent names what a notification is about. It is the one list both
// a workflow's notify: and the daemon's --notify-config are checked
// against, and what host/notify emits.
type NotifyEvent string

// The events a subscription may list.
const (
	// NotifyQuestion: an agent asked the owner (ask_user).
	NotifyQuestion NotifyEvent = "question"
	// NotifyApproval: a gated action waits for approval.
	NotifyApproval NotifyEvent = "approval"
	// NotifyRunFailed: an agent failed for good, after its retries.
	NotifyRunFailed NotifyEvent = "run_failed"
	// NotifyOverBudget: an agent or a workflow went over its budget.
	NotifyOverBudget NotifyEvent = "over_budget"
	// NotifyLoopGuard: the loop guard paused a workflow.
	NotifyLoopGuard NotifyEvent = "loop_guard"
	// NotifyIdle: a workflow's team finished its work.
	NotifyIdle NotifyEvent = "idle"
	// NotifyMemberDown: a cluster member stopped answering and the others
	// took its work back.
	NotifyMemberDown NotifyEvent = "member_down"
	// NotifyTest is `agent-worker notify test`: every subscription of the
	// workflow gets it, whatever its events. It cannot be listed.
	NotifyTest NotifyEvent = "test"
)

// NotifyEvents are the events a subscription may list, in the order the
// messages show them.
var NotifyEvents = []NotifyEvent{NotifyQuestion, NotifyApproval, NotifyRunFailed, NotifyOverBudget, NotifyLoopGuard, NotifyIdle, NotifyMemberDown}

// Notify is one subscription: the events POSTed to Webhook, signed with
// the secret in the daemon's environment variable SecretEnv ("" sends
// them unsigned, as a chat's incoming webhook expects). Line is where it
// is written.
type Notify struct {
	Webhook   string
	Events    []NotifyEvent
	SecretEnv string
	Line      int
}

// Wants reports whether n subscribes to ev; every subscription gets a
// test.
func (n Notify) Wants(ev NotifyEvent) bool {
	return ev == NotifyTest || slices.Contains(n.Events, ev)
}

// notifyKeys are the keys of one subscription.
var notifyKeys = []string{"webhook", "events", "secret_env"}

const notifyExample = `notify: [{webhook: "https://hooks.example.com/agents", events: [question, run_failed], secret_env: NOTIFY_SECRET}]`

// notify reads notify:, a list of subscriptions.
func (p *parser) notify(n *yaml.Node) []Notify {
	if isNull(n) {
		return nil
	}
	if n.Kind != yaml.SequenceNode {
		p.add(n, "notify must be a list, e.g. %s", notifyExample)
		return nil
	}
	var out []Notify
	for i, item := range n.Content {
		item = deref(item)
		if item.Kind != yaml.MappingNode {
			p.add(item, "each notify entry must be a map, e.g. %s", notifyExample)
			continue
		}
		where := fmt.Sprintf("notify %d", i+1)
		fs := p.fields(item, "in "+where, notifyKeys...)
		s := Notify{Webhook: p.str(fs["webhook"], where+" webhook"), SecretEnv: p.str(fs["secret_env"], where+" secret_env"), Line: item.Line}
		if isNull(fs["webhook"]) {
			p.add(item, "%s needs webhook: the URL to POST to, e.g. webhook: https://hooks.example.com/agents", where)
		} else if err := CheckWebhookURL(s.Webhook); err != nil {
			p.add(fs["webhook"], "%s: %v", where, err)
		}
		if s.SecretEnv != "" && !identRE.MatchString(s.SecretEnv) {
			p.add(fs["secret_env"], "%s: secret_env %q is not an environment variable name: use letters, digits and _, not starting with a digit", where, s.SecretEnv)
		}
		s.Events = p.notifyEvents(item, fs["events"], where)
		out = append(out, s)
	}
	return out
}

// notifyEvents reads one subscription's events: a list of known events,
// each once.
func (p *parser) notifyEvents(item, n *yaml.Node, where string) []NotifyEvent {
	known := make([]string, len(NotifyEvents))
	for i, e := range NotifyEvents {
		known[i] = string(e)
	}
	if isNull(n) {
		p.add(item, "%s needs events: what to send, some of %s", where, strings.Join(known, ", "))
		return nil
	}
	var out []NotifyEvent
	for _, e := range p.plainList(n, where+" events", "events: [question, run_failed]") {
		ev := NotifyEvent(e.Value)
		switch {
		case !slices.Contains(NotifyEvents, ev):
			p.add(e, "%s: unknown event %q: %s", where, e.Value, suggest(e.Value, known, "events are "))
		case slices.Contains(out, ev):
			p.add(e, "%s: event %s is listed twice: remove one", where, e.Value)
		default:
			out = append(out, ev)
		}
	}
	if n.Kind == yaml.SequenceNode && len(n.Content) == 0 {
		p.add(n, "%s lists no events: name some of %s", where, strings.Join(known, ", "))
	}
	return out
}

// CheckWebhookURL is the one check of a notification's URL: absolute
// http or https with a host. The error never repeats the URL, which may
// hold a token.
func CheckWebhookURL(s string) error {
	u, err := url.Parse(s)
	switch {
	case strings.TrimSpace(s) == "":
		return fmt.Errorf("webhook is empty: write the URL to POST to, e.g. https://hooks.example.com/agents")
	case err != nil:
		return fmt.Errorf("webhook is not a URL (%v): write e.g. https://hooks.example.com/agents", urlErr(err))
	case u.Scheme == "":
		return fmt.Errorf("webhook must be an http:// or https:// URL, with its scheme: write e.g. https://hooks.example.com/agents")
	case u.Scheme != "http" && u.Scheme != "https":
		return fmt.Errorf("webhook must be an http:// or https:// URL, not %q: write e.g. https://hooks.example.com/agents", u.Scheme+":")
	case u.Host == "" || u.Hostname() == "":
		return fmt.Errorf("webhook URL has no host: write e.g. https://hooks.example.com/agents")
	case u.Fragment != "":
		return fmt.Errorf("webhook URL has a #fragment, which is never sent: remove it")
	}
	return nil
}

// urlErr is url.Parse's complaint without the URL it quotes.
func urlErr(err error) error {
	if ue, ok := errors.AsType[*url.Error](err); ok {
		return ue.Err
	}
	return err
}

// ParseNotifyConfig reads the daemon's --notify-config file: the same
// list as a workflow's notify:, either as the whole file or under a
// notify: key. Problems come back as Problems with file:line:col.
func ParseNotifyConfig(path string, content []byte) ([]Notify, error) {
	p := &parser{file: path, src: strings.Split(string(content), "\n"), setupAs: map[string]int{}, params: map[string]bool{}}
	var doc yaml.Node
	if err := yaml.Unmarshal(content, &doc); err != nil {
		syn := yamlerr.Syntax(err, content)
		p.addAt(syn.Line, 0, "invalid YAML: %s", syn.Msg)
		return nil, p.probs
	}
	var list *yaml.Node
	if len(doc.Content) > 0 {
		list = deref(doc.Content[0])
	}
	switch {
	case list == nil || isNull(list):
		p.addAt(1, 1, "the notify config is empty: write a list, e.g. %s", notifyExample)
	case list.Kind == yaml.MappingNode:
		fs := p.fields(list, "in the notify config", "notify")
		list = fs["notify"]
		if isNull(list) {
			p.addAt(1, 1, "the notify config has no notify: list, e.g. %s", notifyExample)
			list = nil
		}
	}
	subs := p.notify(list)
	if len(p.probs) > 0 {
		p.probs.sort()
		return nil, p.probs
	}
	return subs, nil
}

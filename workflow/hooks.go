package workflow

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"net/url"
	"path"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"
)

// HookProvider is who sends a trigger's webhooks, which says how a delivery
// proves where it comes from, which header names its event and its id.
type HookProvider string

// The providers a trigger may name.
const (
	// ProviderHMAC is any sender that signs the body with HMAC-SHA256 in
	// X-Hub-Signature-256 (the default, and what GitHub does).
	ProviderHMAC HookProvider = "hmac"
	// ProviderGitHub is GitHub: the HMAC signature, X-GitHub-Event and
	// the body's action, X-GitHub-Delivery.
	ProviderGitHub HookProvider = "github"
	// ProviderGitLab is GitLab: the secret itself in X-Gitlab-Token,
	// X-Gitlab-Event and object_attributes.action, X-Gitlab-Event-UUID.
	ProviderGitLab HookProvider = "gitlab"
)

// HookProviders are the trigger providers, in the order messages list them.
var HookProviders = []HookProvider{ProviderHMAC, ProviderGitHub, ProviderGitLab}

// providerEvents are the event names a provider's events: may use: each
// event kind and, for those whose body says what happened, its actions.
// A kind alone matches every action of it. The kinds are the providers'
// documented webhook events (GitHub's X-GitHub-Event values, GitLab's
// object kinds); the actions are the common ones.
var providerEvents = map[HookProvider]map[string][]string{
	ProviderGitHub: {
		"pull_request": {"opened", "closed", "reopened", "synchronize", "edited", "assigned", "unassigned", "labeled", "unlabeled",
			"review_requested", "review_request_removed", "ready_for_review", "converted_to_draft", "locked", "unlocked",
			"auto_merge_enabled", "auto_merge_disabled", "enqueued", "dequeued", "milestoned", "demilestoned"},
		"pull_request_review":         {"submitted", "edited", "dismissed"},
		"pull_request_review_comment": {"created", "edited", "deleted"},
		"issues": {"opened", "closed", "reopened", "edited", "deleted", "assigned", "unassigned", "labeled", "unlabeled",
			"transferred", "pinned", "unpinned", "locked", "unlocked", "milestoned", "demilestoned"},
		"issue_comment":     {"created", "edited", "deleted"},
		"push":              nil,
		"create":            nil,
		"delete":            nil,
		"release":           {"published", "unpublished", "created", "edited", "deleted", "prereleased", "released"},
		"check_run":         {"created", "completed", "rerequested", "requested_action"},
		"check_suite":       {"completed", "requested", "rerequested"},
		"workflow_run":      {"requested", "in_progress", "completed"},
		"workflow_dispatch": nil,
		"discussion":        {"created", "edited", "deleted", "answered", "closed", "reopened"},
		"ping":              nil,
	},
	ProviderGitLab: {
		"merge_request":      {"open", "close", "reopen", "update", "merge", "approved", "unapproved", "approval", "unapproval"},
		"issue":              {"open", "close", "reopen", "update"},
		"confidential_issue": {"open", "close", "reopen", "update"},
		"note":               nil,
		"confidential_note":  nil,
		"push":               nil,
		"tag_push":           nil,
		"pipeline":           nil,
		"job":                nil,
		"deployment":         nil,
		"release":            {"create", "update", "delete"},
		"wiki_page":          {"create", "update", "delete"},
		"emoji":              {"award", "revoke"},
		"feature_flag":       nil,
	},
}

// EventNames are the names events: may hold for p, sorted: each kind and
// each kind.action.
func EventNames(p HookProvider) []string {
	var out []string
	for kind, actions := range providerEvents[p] {
		out = append(out, kind)
		for _, a := range actions {
			out = append(out, kind+"."+a)
		}
	}
	slices.Sort(out)
	return out
}

// checkEvent says what is wrong with one events: name of provider p, or "".
func checkEvent(p HookProvider, name string) string {
	kinds := providerEvents[p]
	kind, action, hasAction := strings.Cut(name, ".")
	actions, ok := kinds[kind]
	if !ok {
		names := make([]string, 0, len(kinds))
		for k := range kinds {
			names = append(names, k)
		}
		slices.Sort(names)
		if best := Closest(name, EventNames(p)); best != "" {
			return fmt.Sprintf("unknown %s event %q: did you mean %s?", p, name, best)
		}
		return fmt.Sprintf("unknown %s event %q: its events are %s (each may be narrowed to an action, e.g. %s)", p, name, strings.Join(names, ", "), exampleEvent(p))
	}
	if hasAction && !slices.Contains(actions, action) {
		if len(actions) == 0 {
			return fmt.Sprintf("%s event %q has no actions to choose from: write %s", p, kind, kind)
		}
		return fmt.Sprintf("unknown %s action %q of %s: %s", p, action, kind, suggest(action, actions, "its actions are "))
	}
	return ""
}

func exampleEvent(p HookProvider) string {
	if p == ProviderGitLab {
		return "merge_request.open"
	}
	return "pull_request.opened"
}

// EventName is the events: name of one delivery from p: its kind (from
// the event header: X-GitHub-Event as is, X-Gitlab-Event as GitLab's
// object kind) and, when the body says, "." and its action (GitHub's
// action, GitLab's object_attributes.action). It is "" for an hmac
// trigger, whose sender says nothing of its events.
func EventName(p HookProvider, header string, body []byte) string {
	var kind, action string
	switch p {
	case ProviderGitHub:
		kind = strings.TrimSpace(header)
		action = bodyString(body, "action")
	case ProviderGitLab:
		// "Merge Request Hook" → merge_request, "Confidential Note Hook"
		// → confidential_note, "Job Hook" → job.
		h := strings.TrimSuffix(strings.TrimSpace(header), " Hook")
		kind = strings.ReplaceAll(strings.ToLower(h), " ", "_")
		action = bodyString(body, "object_attributes.action")
	default:
		return ""
	}
	if action == "" {
		return kind
	}
	return kind + "." + action
}

// MatchEvent reports whether a delivery named name (EventName) is one a
// trigger listening to events takes: every delivery when events is
// empty, else one whose kind.action or kind alone is listed.
func MatchEvent(events []string, name string) bool {
	if len(events) == 0 {
		return true
	}
	kind, _, _ := strings.Cut(name, ".")
	return slices.Contains(events, name) || slices.Contains(events, kind)
}

// bodyString is the string at a dot path of a JSON body, "" when absent
// or not a string.
func bodyString(body []byte, path string) string {
	var doc any
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	if dec.Decode(&doc) != nil {
		return ""
	}
	v, _ := lookupPath(doc, path)
	s, _ := v.(string)
	return s
}

// ReportTo is where a report goes.
type ReportTo string

// The places a report may go.
const (
	ReportGitLab ReportTo = "gitlab"
	ReportGitHub ReportTo = "github"
)

// reportTos are the report targets, for messages.
var reportTos = []string{string(ReportGitLab), string(ReportGitHub)}

// Report posts a result back where a webhook came from when the team it
// started goes idle: the last message of Agent, or the document at
// Document, as a GitLab merge-request note or a GitHub issue or pull
// request comment. Its fields may use ${{ body.PATH }} of the delivery;
// WithDefaults fills those left empty from the providers' payload shapes.
type Report struct {
	To              ReportTo
	Agent, Document string
	// TokenEnv names the daemon's environment variable holding the API
	// token (GitLab's PRIVATE-TOKEN, GitHub's bearer token).
	TokenEnv string
	// BaseURL is the API's root: https://gitlab.com, https://api.github.com
	// or a self-hosted one's.
	BaseURL string
	// Project and MergeRequest are GitLab's project id (or path) and
	// merge request iid; Repo ("owner/name") and Number GitHub's.
	Project, MergeRequest string
	Repo, Number          string
	Line                  int
}

// WithDefaults is r with its empty fields filled in: the base URL of the
// public service, and the project and merge request (GitLab) or
// repository and number (GitHub) read from a merge_request, note,
// pull_request or issues delivery's body.
func (r Report) WithDefaults() Report {
	switch r.To {
	case ReportGitLab:
		if r.BaseURL == "" {
			r.BaseURL = "https://gitlab.com"
		}
		if r.Project == "" {
			r.Project = "${{ body.project.id }}"
		}
		if r.MergeRequest == "" {
			r.MergeRequest = "${{ body.object_attributes.iid }}"
		}
	case ReportGitHub:
		if r.BaseURL == "" {
			r.BaseURL = "https://api.github.com"
		}
		if r.Repo == "" {
			r.Repo = "${{ body.repository.full_name }}"
		}
		if r.Number == "" {
			r.Number = "${{ body.pull_request.number }}"
		}
	}
	return r
}

// URL is where the report is POSTed, its parts rendered from body: a
// GitLab merge request's notes or a GitHub issue's comments (a pull
// request is an issue there). missing lists the body paths it lacked;
// the URL is then not usable.
func (r Report) URL(body []byte) (u string, missing []string, err error) {
	r = r.WithDefaults()
	render := func(s string) string {
		if err != nil {
			return ""
		}
		var m []string
		s, m, err = RenderTrigger(s, body)
		missing = append(missing, m...)
		return strings.TrimSpace(s)
	}
	base := strings.TrimSuffix(r.BaseURL, "/")
	switch r.To {
	case ReportGitLab:
		project, mr := render(r.Project), render(r.MergeRequest)
		u = base + "/api/v4/projects/" + url.PathEscape(project) + "/merge_requests/" + url.PathEscape(mr) + "/notes"
	case ReportGitHub:
		repo, number := render(r.Repo), render(r.Number)
		owner, name, _ := strings.Cut(repo, "/")
		u = base + "/repos/" + url.PathEscape(owner) + "/" + url.PathEscape(name) + "/issues/" + url.PathEscape(number) + "/comments"
	default:
		return "", nil, fmt.Errorf("report to %q: use gitlab or github", r.To)
	}
	if err != nil {
		return "", nil, err
	}
	return u, missing, nil
}

// reportExample is a whole report, for messages that show what to write.
const reportExample = `report: {to: gitlab, agent: reviewer, token_env: GITLAB_TOKEN}`

// report reads a report: {to, agent | document, token_env, base_url,
// project, merge_request, repo, number}; agents are the file's, which
// agent: must name.
func (p *parser) report(n *yaml.Node, agents []Agent, where string) *Report {
	if isNull(n) {
		return nil
	}
	if n.Kind != yaml.MappingNode {
		p.add(n, "%s must be a map, e.g. %s", where, reportExample)
		return nil
	}
	fs := p.fields(n, "in "+where, "to", "agent", "document", "token_env", "base_url", "project", "merge_request", "repo", "number")
	r := &Report{To: ReportTo(p.str(fs["to"], "to")), Agent: p.str(fs["agent"], "agent"), Document: p.str(fs["document"], "document"),
		TokenEnv: p.str(fs["token_env"], "token_env"), BaseURL: p.str(fs["base_url"], "base_url"),
		Project: p.str(fs["project"], "project"), MergeRequest: p.str(fs["merge_request"], "merge_request"),
		Repo: p.str(fs["repo"], "repo"), Number: p.str(fs["number"], "number"), Line: n.Line}
	switch {
	case r.To == "":
		p.add(n, "%s needs to: gitlab (a merge-request note) or github (an issue or pull request comment), e.g. %s", where, reportExample)
	case !slices.Contains(reportTos, string(r.To)):
		p.add(fs["to"], "%s: unknown to %q: %s", where, r.To, suggest(string(r.To), reportTos, "use one of "))
	}
	switch {
	case r.Agent == "" && r.Document == "":
		p.add(n, "%s needs what to post: agent: NAME (its last message) or document: PATH, e.g. %s", where, reportExample)
	case r.Agent != "" && r.Document != "":
		p.add(fs["document"], "%s names both an agent and a document: keep one", where)
	case r.Agent != "":
		names := make([]string, len(agents))
		for i, a := range agents {
			names[i] = a.Name
		}
		if !slices.Contains(names, r.Agent) {
			p.add(fs["agent"], "%s: unknown agent %q: %s", where, r.Agent, suggest(r.Agent, names, "the workflow's agents are "))
		}
	default:
		if msg := checkDocPath(r.Document); msg != "" {
			p.add(fs["document"], "%s: document %q %s", where, r.Document, msg)
		}
	}
	switch {
	case r.TokenEnv == "":
		p.add(n, "%s needs token_env: the daemon's environment variable holding the API token, e.g. token_env: GITLAB_TOKEN", where)
	case !identRE.MatchString(r.TokenEnv):
		p.add(fs["token_env"], "%s: token_env %q is not an environment variable name: use letters, digits and _, not starting with a digit", where, r.TokenEnv)
	}
	if r.BaseURL != "" && !strings.Contains(r.BaseURL, "${{") {
		if u, err := url.Parse(r.BaseURL); err != nil || !isHTTP(r.BaseURL) || u.Host == "" {
			p.add(fs["base_url"], "%s: base_url %q must be an http(s) URL, e.g. https://gitlab.example.com", where, r.BaseURL)
		}
	}
	for _, k := range []string{"project", "merge_request"} {
		if fs[k] != nil && r.To == ReportGitHub {
			p.add(fs[k], "%s: %s is GitLab's: a report to github takes repo: and number:", where, k)
		}
	}
	for _, k := range []string{"repo", "number"} {
		if fs[k] != nil && r.To == ReportGitLab {
			p.add(fs[k], "%s: %s is GitHub's: a report to gitlab takes project: and merge_request:", where, k)
		}
	}
	p.body = true
	for _, k := range []string{"base_url", "project", "merge_request", "repo", "number", "document"} {
		if fs[k] != nil {
			p.checkVars(fs[k], fs[k].Value, "", math.MaxInt)
		}
	}
	p.body = false
	return r
}

// checkDocPath says what is wrong with a report's document path, or "":
// it is a team document, relative to the documents folder.
func checkDocPath(s string) string {
	switch {
	case strings.Contains(s, "${{"):
		return ""
	case path.IsAbs(s) || strings.HasPrefix(s, `\`):
		return "must be relative to the team's documents folder, e.g. review.md"
	case path.Clean(s) != s || strings.HasPrefix(s, "../") || s == "..":
		return "must be a clean path inside the team's documents folder, e.g. review.md"
	}
	return ""
}

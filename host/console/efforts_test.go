package console

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/agent-worker/agent-worker/host/api"
)

// What an agent or a user wrote into an effort (notes, proof values, an
// artifact) is shown as text: no <script> of theirs reaches the page.
func TestEffortPageEscapes(t *testing.T) {
	t.Parallel()
	s := New(Config{})
	h := s.Handler(fullAPI(t))
	for _, path := range []string{"/console/efforts/effort-2", "/console/efforts/effort-2/artifacts/2_IMPLEMENT_PLAN.md"} {
		code, body := get(t, s, h, path)
		if code != http.StatusOK {
			t.Fatalf("GET %s: %d\n%s", path, code, body)
		}
		if strings.Contains(body, "<script>window") {
			t.Errorf("GET %s carries a script from the effort:\n%s", path, body)
		}
	}
	_, body := get(t, s, h, "/console/efforts/effort-2")
	for _, want := range []string{"add &lt;script&gt;window.__owned = 1&lt;/script&gt; safely", "with care &lt;script&gt;window.__owned = 1&lt;/script&gt;"} {
		if !strings.Contains(body, want) {
			t.Errorf("the effort page lacks %q", want)
		}
	}
}

// The timeline says where each phase stands: done, current, to come; a
// finished effort has them all done, an abandoned one stops where it was
// given up, and an ended effort's page does not follow the stream.
func TestEffortTimelineStates(t *testing.T) {
	t.Parallel()
	now := time.Now().UTC()
	cases := map[string]struct {
		state string
		phase int
		want  []string
	}{
		"active":    {"active", 2, []string{"done", "current", "to come", "to come"}},
		"finished":  {"finished", 4, []string{"done", "done", "done", "done"}},
		"abandoned": {"abandoned", 2, []string{"done", "abandoned", "not reached", "not reached"}},
	}
	for name, tc := range cases {
		e := api.EffortRow{ID: "effort-2", Agent: "alice@crew:main", Skill: "implement", Ordinal: 2, State: tc.state, Phase: tc.phase, Phases: 4}
		show := effortShow(e, now)
		var got []string
		for _, p := range timeline(show) {
			got = append(got, p.Status)
		}
		if strings.Join(got, ",") != strings.Join(tc.want, ",") {
			t.Errorf("%s: %v, want %v", name, got, tc.want)
		}
		rows := timeline(show)
		if len(rows[0].Checkpoints) != 2 || len(rows[0].Checkpoints[1].ProofFields) != 3 || len(rows[0].Observed) != 1 || len(rows[1].Observed) != 1 || len(rows[2].Checkpoints) != 0 {
			t.Errorf("%s: checkpoints and observations not laid along their phases: %+v", name, rows)
		}
		s := New(Config{})
		mux := http.NewServeMux()
		mux.HandleFunc("GET /efforts/{id}", func(w http.ResponseWriter, r *http.Request) { _ = json.NewEncoder(w).Encode(show) })
		_, body := get(t, s, s.Handler(mux), "/console/efforts/effort-2")
		if live := strings.Contains(body, "data-stream="); live != (tc.state == "active") {
			t.Errorf("%s: page follows the stream: %v", name, live)
		}
	}
}

// An agent without an effort shows nothing of one; a daemon that serves
// no efforts still shows its teams.
func TestTeamPageWithoutEfforts(t *testing.T) {
	t.Parallel()
	full := fullAPI(t)
	s := New(Config{})
	h := s.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/efforts" {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusServiceUnavailable)
			_ = json.NewEncoder(w).Encode(api.Errorf(api.CodeUnavailable, "this daemon serves no efforts"))
			return
		}
		full.ServeHTTP(w, r)
	}))
	code, body := get(t, s, h, "/console/team/crew/main")
	if code != http.StatusOK || strings.Contains(body, `class="effort"`) || !strings.Contains(body, `data-agent="bob@crew"`) {
		t.Errorf("team page without efforts: %d\n%s", code, body)
	}
	_, body = get(t, s, s.Handler(fullAPI(t)), "/console/team/crew/main")
	i := strings.Index(body, `data-agent="bob@crew"`)
	if i < 0 || strings.Contains(body[i:i+strings.Index(body[i:], "</tr>")], `class="effort"`) {
		t.Errorf("bob, who has no effort, shows one:\n%s", body)
	}
}

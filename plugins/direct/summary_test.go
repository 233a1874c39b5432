package direct_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/agent-worker/agent-worker/plugins/internal/fakemodel"
	"github.com/agent-worker/agent-worker/sdk/backend"
	"github.com/agent-worker/agent-worker/sdk/backendtest"
)

// texts are the texts of a model request's system prompt and messages, in
// order, in either API's shape: Anthropic's system field and content
// blocks, or OpenAI's system message and string contents.
func texts(body map[string]any) (system string, messages []string) {
	of := func(content any) string {
		if s, ok := content.(string); ok {
			return s
		}
		var b strings.Builder
		blocks, _ := content.([]any)
		for _, bl := range blocks {
			m, _ := bl.(map[string]any)
			s, _ := m["text"].(string)
			b.WriteString(s)
		}
		return b.String()
	}
	system = of(body["system"])
	msgs, _ := body["messages"].([]any)
	for _, raw := range msgs {
		m, _ := raw.(map[string]any)
		if m["role"] == "system" {
			system += of(m["content"])
			continue
		}
		messages = append(messages, of(m["content"]))
	}
	return system, messages
}

// session is the memory a run saved.
func session(t *testing.T, events []backend.Event) (s string, m struct {
	Dropped   int
	Summary   string
	Exchanges []struct{ Prompt, Reply string }
}) {
	t.Helper()
	sessions := ofKind(events, backend.EventSession)
	if len(sessions) != 1 {
		t.Fatalf("the run sent %d session events, want its memory once", len(sessions))
	}
	if err := json.Unmarshal([]byte(sessions[0].SessionID), &m); err != nil {
		t.Fatal(err)
	}
	return sessions[0].SessionID, m
}

func logs(events []backend.Event) string {
	var b strings.Builder
	for _, e := range ofKind(events, backend.EventLog) {
		b.WriteString(e.Text + "\n")
	}
	return b.String()
}

// When the memory outgrows memory_tokens, the runs it drops are first
// summarised by the agent's model, and the summary opens the next run's
// conversation; it is merged with the next summary, kept when a summary
// fails, and a failed summary never fails the run.
func TestMemorySummarisesWhatItDrops(t *testing.T) {
	t.Parallel()
	for name, model := range map[string]string{
		"anthropic": "anthropic/claude-sonnet-4-5",
		"openai":    "openai/gpt-4o",
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			fm := fakemodel.New(t,
				fakemodel.Turn{Text: "Noted the code word."},
				fakemodel.Turn{Text: "Second task done."},
				fakemodel.Turn{Text: "You were told the code word PINEAPPLE.", InputTokens: 300, OutputTokens: 20}, // summary of run 1
				fakemodel.Turn{Text: "Third task done."},
				fakemodel.Turn{Text: "PINEAPPLE, and you did a second task."}, // summary of run 2
				fakemodel.Turn{Text: "Fourth task done."},
				fakemodel.Turn{Status: http.StatusBadRequest}, // the summary of run 3 fails
			)
			b := newBackend(env(fm))
			pad := strings.Repeat("lorem ipsum ", 60) // each exchange is about 200 tokens
			ask := func(message, resume string) []backend.Event {
				t.Helper()
				d := backendtest.NewDaemon(t) // a fresh inbox for each run
				d.Post("user", "@alice "+message+" "+pad)
				req := configure(d.Request("alice"), model, map[string]any{"memory_tokens": 300})
				req.ResumeSession = resume
				events, err := run(t, b, req)
				if err != nil {
					t.Fatalf("run %q = %v; want it to succeed", message, err)
				}
				return events
			}

			s1, _ := session(t, ask("the code word is PINEAPPLE", ""))
			if n := len(fm.Requests()); n != 1 {
				t.Fatalf("the first run made %d model requests, want 1: nothing to forget yet", n)
			}

			events := ask("do the second task", s1)
			reqs := fm.Requests()
			if len(reqs) != 3 {
				t.Fatalf("the second run made %d model requests, want its turn and a summary", len(reqs)-1)
			}
			system, msgs := texts(reqs[2].Body)
			if !strings.Contains(system, "summary") || len(msgs) != 1 || !strings.Contains(msgs[0], "the code word is PINEAPPLE") ||
				!strings.Contains(msgs[0], "Noted the code word.") || strings.Contains(msgs[0], "do the second task") {
				t.Errorf("summary request: system %q, messages %q; want an instruction to summarise and the dropped run alone", system, msgs)
			}
			if _, ok := reqs[2].Body["tools"]; ok {
				t.Errorf("the summary request offered tools")
			}
			s2, mem := session(t, events)
			if mem.Summary != "You were told the code word PINEAPPLE." || mem.Dropped != 1 || len(mem.Exchanges) != 1 {
				t.Errorf("memory after the second run = %+v; want the summary, 1 dropped, the newest run kept", mem)
			}
			if l := logs(events); !strings.Contains(l, "forgot 1 older run, keeping this summary:\nYou were told the code word PINEAPPLE.") {
				t.Errorf("the transcript's log lines = %q, want the summary", l)
			}
			if u := ofKind(events, backend.EventUsage); len(u) == 0 || u[len(u)-1].Usage.InputTokens != 300 {
				t.Errorf("usage events = %v, want the summary's tokens counted in the run's", u)
			}
			if got := resultOf(t, events); got != "Second task done." {
				t.Errorf("result = %q, want the run's answer, not the summary", got)
			}

			events = ask("do the third task", s2)
			reqs = fm.Requests()
			_, msgs = texts(reqs[3].Body)
			if len(msgs) != 3 || !strings.HasPrefix(msgs[0], "(A summary of your 1 older run, dropped to keep the conversation short:)\nYou were told the code word PINEAPPLE.") ||
				!strings.Contains(msgs[0], "do the second task") {
				t.Fatalf("the third run's conversation = %q; want it to open with the summary, then the kept run and the new prompt", msgs)
			}
			if _, msgs := texts(reqs[4].Body); !strings.Contains(msgs[0], "The earlier summary:\nYou were told the code word PINEAPPLE.") || !strings.Contains(msgs[0], "do the second task") {
				t.Errorf("the second summary request = %q; want the earlier summary merged with the dropped run", msgs)
			}
			s3, mem := session(t, events)
			if mem.Summary != "PINEAPPLE, and you did a second task." || mem.Dropped != 2 {
				t.Errorf("memory after the third run = %+v", mem)
			}

			// The summary request fails: the run succeeds, the run is
			// dropped all the same, the old summary stays and the
			// transcript says why.
			events = ask("do the fourth task", s3)
			if got := resultOf(t, events); got != "Fourth task done." {
				t.Errorf("result = %q", got)
			}
			_, mem = session(t, events)
			if mem.Summary != "PINEAPPLE, and you did a second task." || mem.Dropped != 3 || len(mem.Exchanges) != 1 ||
				!strings.Contains(mem.Exchanges[0].Prompt, "do the fourth task") {
				t.Errorf("memory after a failed summary = %+v; want the third run dropped and the old summary kept", mem)
			}
			if l := logs(events); !strings.Contains(l, "forgot 1 older run without a summary") || !strings.Contains(l, "400") {
				t.Errorf("the transcript's log lines = %q, want the failed summary explained", l)
			}
			if n := len(fm.Requests()); n != 7 {
				t.Errorf("%d model requests in all, want 7 (a 400 is not retried)", n)
			}
		})
	}
}

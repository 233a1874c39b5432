package direct

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
)

// Conversation memory: the sdk backend keeps an agent's earlier exchanges
// as its session. The daemon saves a run's session event per agent and
// backend and hands it back as the next run's ResumeSession, so the
// memory lives in the daemon's store while the plugin never opens it;
// `agent-worker reset` deletes it, summary and all.
const (
	memoryVersion = 1
	// defaultMemoryTokens bounds the memory unless the agent's config sets
	// memory_tokens; maxMemoryTokens bounds that setting, which keeps the
	// session far below the plugin protocol's message limit.
	defaultMemoryTokens = 20_000
	maxMemoryTokens     = 200_000
	// Each exchange is cut before it is kept: its prompt, each tool's
	// arguments and result, and the whole reply.
	memPromptChars = 8_000
	memArgsChars   = 500
	memResultChars = 2_000
	memReplyChars  = 16_000
	// A summary of the dropped exchanges may take a fifth of the memory,
	// up to summaryTokens; the model is asked for it with at most
	// summaryMaxTokens of output (reasoning models spend some thinking)
	// and summaryTimeout, so that forgetting never holds up a run long.
	summaryTokens    = 1_000
	summaryMaxTokens = 2_048
	summaryTimeout   = 2 * time.Minute
)

// memory is an agent's conversation so far, oldest exchange first. It is
// the JSON of the session event.
type memory struct {
	Version int `json:"v"`
	// Dropped counts the oldest exchanges dropped to stay under the
	// token limit.
	Dropped int `json:"dropped,omitempty"`
	// Summary is the model's summary of the dropped exchanges, merged
	// with the one before; "" until a summary succeeded. It opens the
	// history, so the agent keeps the gist of what it forgot.
	Summary   string     `json:"summary,omitempty"`
	Exchanges []exchange `json:"exchanges"`
}

// exchange is one run: what the agent was asked and what it did, as text.
type exchange struct {
	Prompt string `json:"prompt"`
	Reply  string `json:"reply"`
}

// loadMemory reads a session the backend saved; "" is no memory yet.
func loadMemory(session string) (memory, error) {
	m := memory{Version: memoryVersion}
	if session == "" {
		return m, nil
	}
	if err := json.Unmarshal([]byte(session), &m); err != nil {
		return memory{Version: memoryVersion}, fmt.Errorf("not a memory of the sdk backend: %w", err)
	}
	if m.Version != memoryVersion {
		return memory{Version: memoryVersion}, fmt.Errorf("memory version %d, this backend reads %d", m.Version, memoryVersion)
	}
	return m, nil
}

// estimateTokens counts tokens roughly, as the APIs' tokenizers average
// about four characters per token in English text and code.
func estimateTokens(s string) int { return (len(s) + 3) / 4 }

func (e exchange) tokens() int { return estimateTokens(e.Prompt) + estimateTokens(e.Reply) }

// summaryBudget is the room, in tokens, a memory of limit tokens keeps
// for its summary.
func summaryBudget(limit int) int { return min(limit/5, summaryTokens) }

// add keeps e, cut to fit when it alone is larger than the memory's room
// for exchanges. It drops nothing: overflow says what must go.
func (m *memory) add(e exchange, limit int) {
	if room := limit - summaryBudget(limit); e.tokens() > room {
		chars := room * 4 // a quarter for the prompt, the rest for the reply
		e.Prompt = cutMiddle(e.Prompt, max(chars/4, 200))
		e.Reply = cutMiddle(e.Reply, max(chars*3/4-100, 200))
	}
	m.Exchanges = append(m.Exchanges, e)
}

// overflow is how many of the oldest exchanges must go for the memory to
// fit in limit tokens, the newest always kept. Once anything is dropped
// the summary's budget is set aside, whether or not a summary is made.
func (m *memory) overflow(limit int) int {
	total := 0
	for _, x := range m.Exchanges {
		total += x.tokens()
	}
	if m.Summary == "" && m.Dropped == 0 && total <= limit {
		return 0
	}
	room, n := limit-summaryBudget(limit), 0
	for total > room && len(m.Exchanges)-n > 1 {
		total -= m.Exchanges[n].tokens()
		n++
	}
	return n
}

// forget drops the n oldest exchanges. summary, when the model made one,
// replaces the old summary (it covers it); "" keeps the old one, and what
// was dropped is only counted.
func (m *memory) forget(n int, summary string, limit int) {
	m.Exchanges = m.Exchanges[n:]
	m.Dropped += n
	if summary = strings.TrimSpace(summary); summary != "" {
		m.Summary = cutMiddle(summary, max(summaryBudget(limit)*4-40, 100)) // the cut mark fits too
	}
}

func (m memory) encode() string {
	b, err := json.Marshal(m)
	if err != nil { // strings and ints only
		panic("sdk: encode memory: " + err.Error())
	}
	return string(b)
}

// history is the memory as turns of the conversation a run continues:
// each earlier prompt as the user's, each reply as the model's.
func (m memory) history() []exchange {
	out := make([]exchange, len(m.Exchanges))
	for i, e := range m.Exchanges {
		prompt := "(An earlier run of yours. What you were given then:)\n" + e.Prompt
		if i == 0 && m.Summary != "" {
			prompt = fmt.Sprintf("(A summary of your %d older %s, dropped to keep the conversation short:)\n%s\n\n%s", m.Dropped, plural(m.Dropped, "run"), m.Summary, prompt)
		} else if i == 0 && m.Dropped > 0 {
			were := "were"
			if m.Dropped == 1 {
				were = "was"
			}
			prompt = fmt.Sprintf("(%d older %s of your conversation %s forgotten to keep it short.)\n\n%s", m.Dropped, plural(m.Dropped, "run"), were, prompt)
		}
		reply := e.Reply
		if strings.TrimSpace(reply) == "" {
			reply = "(no reply)" // the APIs refuse empty messages
		}
		out[i] = exchange{Prompt: prompt, Reply: reply}
	}
	return out
}

// transcript collects a run's exchange as it happens.
type transcript struct {
	prompt string
	reply  strings.Builder
}

func (t *transcript) text(s string) {
	if s = strings.TrimSpace(s); s != "" {
		t.reply.WriteString(s)
		t.reply.WriteString("\n")
	}
}

func (t *transcript) tool(c call, r result) {
	status := "result"
	if r.isError {
		status = "error"
	}
	fmt.Fprintf(&t.reply, "[called %s %s]\n[%s: %s]\n", c.name, cut(string(c.args), memArgsChars), status, cut(r.text, memResultChars))
}

func (t *transcript) exchange() exchange {
	return exchange{Prompt: cutMiddle(t.prompt, memPromptChars), Reply: cutMiddle(strings.TrimSpace(t.reply.String()), memReplyChars)}
}

// cutMiddle shortens s to about n bytes, keeping its start and its end,
// where a conversation's question and conclusion are.
func cutMiddle(s string, n int) string {
	if len(s) <= n {
		return s
	}
	head, tail := n/2, n-n/2
	return strings.ToValidUTF8(s[:head], "") + fmt.Sprintf("\n[… %d characters cut …]\n", len(s)-head-tail) + strings.ToValidUTF8(s[len(s)-tail:], "")
}

// memoryLimit reads the memory_tokens setting: nil is the default, 0
// turns memory off.
func memoryLimit(n *int) (int, error) {
	switch {
	case n == nil:
		return defaultMemoryTokens, nil
	case *n < 0 || *n > maxMemoryTokens:
		return 0, errors.New("config: memory_tokens must be from 0 (no memory) to 200000")
	}
	return *n, nil
}

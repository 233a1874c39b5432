package direct

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// Conversation memory: the sdk backend keeps an agent's earlier exchanges
// as its session. The daemon saves a run's session event per agent and
// backend and hands it back as the next run's ResumeSession, so the
// memory lives in the daemon's store while the plugin never opens it;
// `agent-worker reset` deletes it.
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
)

// memory is an agent's conversation so far, oldest exchange first. It is
// the JSON of the session event.
type memory struct {
	Version int `json:"v"`
	// Dropped counts the oldest exchanges dropped to stay under the
	// token limit.
	Dropped   int        `json:"dropped,omitempty"`
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

// add keeps e and drops the oldest exchanges until the memory fits in
// limit tokens; an exchange that alone is larger is cut to fit.
func (m *memory) add(e exchange, limit int) {
	if e.tokens() > limit {
		chars := limit * 4 // a quarter for the prompt, the rest for the reply
		e.Prompt = cutMiddle(e.Prompt, max(chars/4, 200))
		e.Reply = cutMiddle(e.Reply, max(chars*3/4-100, 200))
	}
	m.Exchanges = append(m.Exchanges, e)
	total := 0
	for _, x := range m.Exchanges {
		total += x.tokens()
	}
	for total > limit && len(m.Exchanges) > 1 {
		total -= m.Exchanges[0].tokens()
		m.Exchanges = m.Exchanges[1:]
		m.Dropped++
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
		if i == 0 && m.Dropped > 0 {
			prompt = fmt.Sprintf("(%d older %s of your conversation were forgotten to keep it short.)\n\n%s", m.Dropped, plural(m.Dropped, "run"), prompt)
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

package direct

import (
	"fmt"
	"strings"
	"testing"
)

func TestMemoryKeepsTheNewestExchangesUnderItsLimit(t *testing.T) {
	t.Parallel()
	m, err := loadMemory("")
	if err != nil {
		t.Fatal(err)
	}
	const limit = 1000 // tokens, about 4,000 characters
	for i := range 10 {
		m.add(exchange{Prompt: strings.Repeat("p", 400) + string(rune('0'+i)), Reply: strings.Repeat("r", 400)}, limit)
		m.forget(m.overflow(limit), "", limit) // as when the summary fails
	}
	total := 0
	for _, e := range m.Exchanges {
		total += e.tokens()
	}
	if total > limit || len(m.Exchanges)+m.Dropped != 10 || m.Dropped == 0 {
		t.Fatalf("memory holds %d exchanges (%d tokens), dropped %d; want at most %d tokens, the rest counted as dropped", len(m.Exchanges), total, m.Dropped, limit)
	}
	if last := m.Exchanges[len(m.Exchanges)-1].Prompt; !strings.HasSuffix(last, "9") {
		t.Errorf("the newest exchange is %q…, want the last one added", last[len(last)-5:])
	}

	// It survives the trip through the session event.
	back, err := loadMemory(m.encode())
	if err != nil || len(back.Exchanges) != len(m.Exchanges) || back.Dropped != m.Dropped {
		t.Fatalf("loadMemory(encode) = %d exchanges, %d dropped, %v", len(back.Exchanges), back.Dropped, err)
	}
	h := back.history()
	if !strings.Contains(h[0].Prompt, "older runs of your conversation were forgotten") || !strings.Contains(h[1].Prompt, "An earlier run") {
		t.Errorf("history prompts = %q, %q; want the forgotten runs noted first", h[0].Prompt[:80], h[1].Prompt[:60])
	}

	// One exchange larger than the whole limit is cut, not lost.
	m.add(exchange{Prompt: "what is in big.txt?", Reply: strings.Repeat("x", 40_000) + "THE END"}, limit)
	m.forget(m.overflow(limit), "", limit)
	last, total := m.Exchanges[len(m.Exchanges)-1], 0
	for _, e := range m.Exchanges {
		total += e.tokens()
	}
	if total > limit || !strings.HasPrefix(last.Prompt, "what is in") || !strings.HasSuffix(last.Reply, "THE END") || !strings.Contains(last.Reply, "characters cut") {
		t.Errorf("after a huge exchange: %d tokens in all, its reply ends %q; want at most %d and its end kept", total, last.Reply[len(last.Reply)-20:], limit)
	}
}

// A summary, however long the model made it, leaves the memory under its
// limit: it is cut to its budget, for which the exchanges make room.
func TestMemorySummaryFitsTheLimit(t *testing.T) {
	t.Parallel()
	const limit = 1000
	m := memory{Version: memoryVersion}
	for i := range 6 {
		m.add(exchange{Prompt: strings.Repeat("p", 900), Reply: strings.Repeat("r", 300)}, limit)
		if n := m.overflow(limit); n > 0 {
			m.forget(n, fmt.Sprintf("summary %d ", i)+strings.Repeat("s", 5000), limit)
		}
	}
	total := estimateTokens(m.Summary)
	for _, e := range m.Exchanges {
		total += e.tokens()
	}
	if total > limit || !strings.HasPrefix(m.Summary, "summary 5") || m.Dropped == 0 {
		t.Errorf("memory = %d tokens with its summary %q…, %d dropped; want at most %d and the newest summary", total, m.Summary[:12], m.Dropped, limit)
	}
	if h := m.history(); !strings.HasPrefix(h[0].Prompt, fmt.Sprintf("(A summary of your %d older runs", m.Dropped)) {
		t.Errorf("history opens with %q, want the summary", h[0].Prompt[:60])
	}
}

func TestUnreadableMemoryStartsFresh(t *testing.T) {
	t.Parallel()
	for name, s := range map[string]string{
		"a CLI session id": "3f2c1a9e-session",
		"another version":  `{"v":99,"exchanges":[{"prompt":"p","reply":"r"}]}`,
	} {
		t.Run(name, func(t *testing.T) {
			m, err := loadMemory(s)
			if err == nil || len(m.Exchanges) != 0 {
				t.Errorf("loadMemory(%q) = %d exchanges, %v; want an error and an empty memory", s, len(m.Exchanges), err)
			}
		})
	}
}

func TestMemoryLimitSetting(t *testing.T) {
	t.Parallel()
	zero, big, some := 0, 300_000, 5000
	for name, tc := range map[string]struct {
		n       *int
		want    int
		wantErr bool
	}{
		"absent": {nil, defaultMemoryTokens, false},
		"off":    {&zero, 0, false},
		"set":    {&some, 5000, false},
		"huge":   {&big, 0, true},
	} {
		got, err := memoryLimit(tc.n)
		if got != tc.want || (err != nil) != tc.wantErr {
			t.Errorf("%s: memoryLimit = %d, %v; want %d (error %v)", name, got, err, tc.want, tc.wantErr)
		}
	}
}

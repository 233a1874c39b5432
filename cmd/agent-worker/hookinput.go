package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"os"
	"strings"

	"github.com/agent-worker/agent-worker/host/api"
)

// maxToolResult bounds the tool result a PostToolUse sends the daemon for
// the session's transcript (a Read's whole file is not needed there).
const maxToolResult = 4000

// call is the daemon's HookCall for in: what Claude's hook input says,
// with the context the session uses and, for PreCompact, its last words,
// both read from its transcript file (Claude Code passes their path).
func (in hookInput) call(event string) api.HookCall {
	c := api.HookCall{Event: event, SessionID: in.SessionID, Cwd: in.Cwd, StopHookActive: in.StopHookActive,
		Source: in.Source, Prompt: in.Prompt, ToolName: in.ToolName, ToolInput: in.ToolInput}
	if len(in.ToolResponse) > 0 {
		c.ToolResult = clip(compactJSON(in.ToolResponse), maxToolResult)
	}
	if in.TranscriptPath != "" {
		c.ContextTokens, c.LastAssistant = transcriptTail(in.TranscriptPath)
	}
	if c.LastAssistant == "" {
		c.LastAssistant = in.LastAssistant
	}
	if event != api.HookPreCompact {
		c.LastAssistant = "" // only the dehydration needs it
	}
	return c
}

func compactJSON(raw json.RawMessage) string {
	var b bytes.Buffer
	if json.Compact(&b, raw) != nil {
		return string(raw)
	}
	return b.String()
}

// transcriptTailBytes is how much of a session's transcript is read for
// its last model answer: its end, whatever its length.
const transcriptTailBytes = 512 << 10

// transcriptTail reads Claude Code's transcript (JSON lines) for its last
// model answer: the context that answer used (input, cache and output
// tokens of its usage) and its text. Zero and "" when it cannot tell.
func transcriptTail(path string) (tokens int64, text string) {
	f, err := os.Open(path)
	if err != nil {
		return 0, ""
	}
	defer f.Close()
	if fi, err := f.Stat(); err == nil && fi.Size() > transcriptTailBytes {
		if _, err := f.Seek(fi.Size()-transcriptTailBytes, io.SeekStart); err != nil {
			return 0, ""
		}
	}
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 16<<20)
	for sc.Scan() {
		var line struct {
			Type    string `json:"type"`
			Message struct {
				Model string `json:"model"`
				Usage *struct {
					Input         int64 `json:"input_tokens"`
					CacheCreation int64 `json:"cache_creation_input_tokens"`
					CacheRead     int64 `json:"cache_read_input_tokens"`
					Output        int64 `json:"output_tokens"`
				} `json:"usage"`
				Content []struct {
					Type string `json:"type"`
					Text string `json:"text"`
				} `json:"content"`
			} `json:"message"`
		}
		if json.Unmarshal(sc.Bytes(), &line) != nil || line.Type != "assistant" || line.Message.Model == "<synthetic>" {
			continue
		}
		if u := line.Message.Usage; u != nil {
			if n := u.Input + u.CacheCreation + u.CacheRead + u.Output; n > 0 {
				tokens = n
			}
		}
		var parts []string
		for _, c := range line.Message.Content {
			if c.Type == "text" && strings.TrimSpace(c.Text) != "" {
				parts = append(parts, c.Text)
			}
		}
		if len(parts) > 0 {
			text = strings.Join(parts, "\n")
		}
	}
	return tokens, text
}

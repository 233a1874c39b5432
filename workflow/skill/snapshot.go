package skill

import (
	"encoding/json"
	"fmt"
)

// snapshot is the JSON an effort keeps of its skill file (store.Effort's
// Snapshot): the file's bytes as they were when the effort started, and
// where it was, so that an edit of the file mid-effort changes nothing.
type snapshot struct {
	Path    string `json:"path"`
	Content string `json:"content"`
}

// Snapshot is the JSON kept of the skill file read from path with content.
func Snapshot(path string, content []byte) json.RawMessage {
	b, _ := json.Marshal(snapshot{Path: path, Content: string(content)}) // two strings always encode
	return b
}

// FromSnapshot parses a skill kept by Snapshot; it also reads the bare
// file content given as a JSON string.
func FromSnapshot(raw json.RawMessage) (*Skill, error) {
	var s snapshot
	if err := json.Unmarshal(raw, &s); err != nil {
		var content string
		if err2 := json.Unmarshal(raw, &content); err2 != nil {
			return nil, fmt.Errorf("skill snapshot: %w", err)
		}
		s.Content = content
	}
	return Parse(s.Path, []byte(s.Content))
}

package skill

import (
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"sync"
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

// parsed keeps the skills FromSnapshot parsed, by the snapshot's hash: an
// effort's snapshot never changes, and every effort tool call and gate
// decision reads it (a parse costs a hundred times the hash). At most
// maxParsed are kept; past that the cache starts over.
var parsed = struct {
	sync.Mutex
	m map[[sha256.Size]byte]*Skill
}{m: map[[sha256.Size]byte]*Skill{}}

const maxParsed = 256

// FromSnapshot parses a skill kept by Snapshot; it also reads the bare
// file content given as a JSON string. The skill it returns is shared
// with other callers of the same snapshot: read it, never change it.
func FromSnapshot(raw json.RawMessage) (*Skill, error) {
	sum := sha256.Sum256(raw)
	parsed.Lock()
	sk := parsed.m[sum]
	parsed.Unlock()
	if sk != nil {
		return sk, nil
	}
	sk, err := fromSnapshot(raw)
	if err != nil {
		return nil, err
	}
	parsed.Lock()
	if len(parsed.m) >= maxParsed {
		clear(parsed.m)
	}
	parsed.m[sum] = sk
	parsed.Unlock()
	return sk, nil
}

func fromSnapshot(raw json.RawMessage) (*Skill, error) {
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

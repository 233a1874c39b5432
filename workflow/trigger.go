package workflow

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// RenderTrigger fills the ${{ body.PATH }} variables of a trigger's message
// (as Resolve left it) from one delivery's JSON body. A path the body lacks
// renders empty and is returned in missing, for the daemon to log: a
// webhook sender's payload varies by event, and a message with a hole is
// more useful than none. Strings render as they are, null as nothing,
// numbers as written, objects and arrays as compact JSON. Array elements
// are addressed by their index (body.commits.0.id).
//
// Values from the body are not read again for variables. Values Resolve
// filled in earlier are, if they happen to hold ${{ body.PATH }} text.
// A body that is not JSON is an error only when the message reads it.
func RenderTrigger(message string, body []byte) (text string, missing []string, err error) {
	if !strings.Contains(message, "${{") {
		return message, nil, nil
	}
	var doc any
	parsed := false
	text = varRE.ReplaceAllStringFunc(message, func(m string) string {
		expr := varRE.FindStringSubmatch(m)[1]
		path, ok := strings.CutPrefix(expr, "body.")
		if !ok || err != nil {
			return m
		}
		if !parsed {
			parsed = true
			// json.Valid first: a Decoder stops after one value, and its
			// More misses trailing text such as a stray } or ].
			dec := json.NewDecoder(bytes.NewReader(body))
			dec.UseNumber()
			if !json.Valid(body) || dec.Decode(&doc) != nil {
				err = errors.New("the request body is not JSON, and the trigger's message reads it: send JSON (for a GitHub webhook, set its content type to application/json)")
				return m
			}
		}
		v, found := lookupPath(doc, path)
		if !found {
			missing = append(missing, expr)
			return ""
		}
		return renderValue(v)
	})
	if err != nil {
		return "", nil, err
	}
	return text, missing, nil
}

// lookupPath walks a dot path through decoded JSON.
func lookupPath(v any, path string) (any, bool) {
	for _, key := range strings.Split(path, ".") {
		switch node := v.(type) {
		case map[string]any:
			next, ok := node[key]
			if !ok {
				return nil, false
			}
			v = next
		case []any:
			i, err := strconv.Atoi(key)
			if err != nil || i < 0 || i >= len(node) {
				return nil, false
			}
			v = node[i]
		default:
			return nil, false
		}
	}
	return v, true
}

func renderValue(v any) string {
	switch v := v.(type) {
	case nil:
		return ""
	case string:
		return v
	case json.Number:
		return v.String()
	case bool:
		return strconv.FormatBool(v)
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false) // a message, not a web page: keep <, > and & as sent
	if err := enc.Encode(v); err != nil {
		return fmt.Sprint(v)
	}
	return strings.TrimSuffix(b.String(), "\n")
}

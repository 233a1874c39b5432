package mock

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// parseYAML reads the YAML a script file needs: block sequences and
// mappings, one-line flow collections, plain and quoted scalars, comments
// and | or > block scalars. Anchors, aliases, tags and multi-line flow are
// refused with the line. Plugins may not depend on a YAML library
// (ARCHITECTURE.md "Layout"), and a script needs no more than this. Values
// come out as encoding/json would decode them, so a YAML script and a
// JSON one go through the same step checks.
func parseYAML(name string, src []byte) (any, error) {
	p := &yamlParser{name: name}
	for i, raw := range strings.Split(string(src), "\n") {
		raw = strings.TrimSuffix(raw, "\r")
		body := strings.TrimLeft(raw, " ")
		if strings.HasPrefix(body, "\t") {
			return nil, p.errorf(i+1, "indent with spaces, not tabs")
		}
		p.lines = append(p.lines, yamlLine{num: i + 1, raw: raw, indent: len(raw) - len(body), text: stripComment(body)})
	}
	p.skipBlank()
	if p.pos < len(p.lines) && p.lines[p.pos].text == "---" {
		p.pos++
	}
	v, err := p.block(0)
	if err != nil {
		return nil, err
	}
	if p.skipBlank(); p.pos < len(p.lines) && p.lines[p.pos].text != "..." {
		return nil, p.errorf(p.lines[p.pos].num, "unexpected %q (check the indentation)", p.lines[p.pos].text)
	}
	return v, nil
}

type yamlLine struct {
	num    int
	raw    string
	indent int
	text   string // without indentation, comment and trailing spaces
}

type yamlParser struct {
	name  string
	lines []yamlLine
	pos   int
}

func (p *yamlParser) errorf(line int, format string, args ...any) error {
	return fmt.Errorf("%s:%d: %s", p.name, line, fmt.Sprintf(format, args...))
}

func (p *yamlParser) skipBlank() {
	for p.pos < len(p.lines) && p.lines[p.pos].text == "" {
		p.pos++
	}
}

// block parses the node at the next line if it is indented at least min.
func (p *yamlParser) block(min int) (any, error) {
	p.skipBlank()
	if p.pos == len(p.lines) || p.lines[p.pos].indent < min {
		return nil, nil
	}
	l := p.lines[p.pos]
	if isItem(l.text) {
		return p.sequence(l.indent)
	}
	if _, _, ok := splitKey(l.text); ok {
		return p.mapping(l.indent)
	}
	p.pos++
	return p.value(l, l.text, l.indent-1)
}

func isItem(s string) bool { return s == "-" || strings.HasPrefix(s, "- ") }

func (p *yamlParser) sequence(indent int) (any, error) {
	out := []any{}
	for p.skipBlank(); p.pos < len(p.lines); p.skipBlank() {
		l := &p.lines[p.pos]
		if l.indent < indent || l.indent == indent && !isItem(l.text) {
			break
		}
		if l.indent > indent {
			return nil, p.errorf(l.num, "unexpected indentation")
		}
		rest := strings.TrimLeft(l.text[1:], " ")
		var v any
		var err error
		switch _, _, isKey := splitKey(rest); {
		case rest == "":
			p.pos++
			v, err = p.block(indent + 1)
		case isItem(rest) || isKey:
			// The item's node starts on this line: read the line again as
			// if it began where the node does.
			l.indent, l.text = indent+len(l.text)-len(rest), rest
			v, err = p.block(l.indent)
		default:
			p.pos++
			v, err = p.value(*l, rest, indent)
		}
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, nil
}

func (p *yamlParser) mapping(indent int) (any, error) {
	out := map[string]any{}
	for p.skipBlank(); p.pos < len(p.lines); p.skipBlank() {
		l := p.lines[p.pos]
		if l.indent < indent || l.indent == indent && isItem(l.text) {
			break
		}
		if l.indent > indent {
			return nil, p.errorf(l.num, "unexpected indentation")
		}
		key, rest, ok := splitKey(l.text)
		if !ok {
			return nil, p.errorf(l.num, "want key: value, not %q", l.text)
		}
		if _, dup := out[key]; dup {
			return nil, p.errorf(l.num, "key %q appears twice", key)
		}
		p.pos++
		var v any
		var err error
		if rest == "" {
			p.skipBlank()
			if p.pos < len(p.lines) && p.lines[p.pos].indent == indent && isItem(p.lines[p.pos].text) {
				v, err = p.sequence(indent)
			} else {
				v, err = p.block(indent + 1)
			}
		} else {
			v, err = p.value(l, rest, indent)
		}
		if err != nil {
			return nil, err
		}
		out[key] = v
	}
	return out, nil
}

// splitKey splits "key: value" (or "key:") outside quotes and brackets.
func splitKey(s string) (key, rest string, ok bool) {
	if s == "" || isItem(s) || strings.IndexByte("[{#&*!|>%@`", s[0]) >= 0 {
		return "", "", false
	}
	if s[0] == '"' || s[0] == '\'' {
		end := quoteEnd(s)
		if end < 0 || !strings.HasPrefix(s[end:], ":") {
			return "", "", false
		}
		k, err := unquote(s[:end])
		if err != nil {
			return "", "", false
		}
		if after := s[end+1:]; after == "" || after[0] == ' ' {
			return k, strings.TrimSpace(after), true
		}
		return "", "", false
	}
	if strings.HasSuffix(s, ":") && !strings.Contains(s[:len(s)-1], ": ") {
		return strings.TrimSpace(s[:len(s)-1]), "", true
	}
	if i := strings.Index(s, ": "); i > 0 {
		return strings.TrimSpace(s[:i]), strings.TrimSpace(s[i+2:]), true
	}
	return "", "", false
}

// value parses a scalar, a one-line flow collection or a block scalar
// that belongs to a node at indent parent.
func (p *yamlParser) value(l yamlLine, s string, parent int) (any, error) {
	switch s[0] {
	case '|', '>':
		return p.blockScalar(l, s, parent)
	case '&', '*', '!':
		return nil, p.errorf(l.num, "anchors, aliases and tags are not supported")
	case '{', '[':
		f := flow{s: s}
		v, err := f.value()
		if err == nil {
			if f.skip(); f.i < len(f.s) {
				err = fmt.Errorf("unexpected %q after the closing bracket", f.s[f.i:])
			}
		}
		if err != nil {
			return nil, p.errorf(l.num, "%v (quote text that starts with { or [; flow collections must fit on one line)", err)
		}
		return v, nil
	case '"', '\'':
		if end := quoteEnd(s); end != len(s) {
			return nil, p.errorf(l.num, "text after a quoted value, or a quote left open: %s", s)
		}
		v, err := unquote(s)
		if err != nil {
			return nil, p.errorf(l.num, "%v", err)
		}
		return v, nil
	}
	return plain(s), nil
}

// blockScalar reads the lines of a | (literal) or > (folded) scalar: the
// lines indented deeper than parent, with clip, strip (-) or keep (+)
// chomping of trailing newlines.
func (p *yamlParser) blockScalar(l yamlLine, header string, parent int) (any, error) {
	chomp := header[1:]
	if chomp != "" && chomp != "-" && chomp != "+" {
		return nil, p.errorf(l.num, "block scalar header %q: use |, |-, |+, >, >- or >+", header)
	}
	var body []string
	indent := -1
	for ; p.pos < len(p.lines); p.pos++ {
		n := p.lines[p.pos]
		if strings.TrimSpace(n.raw) == "" {
			body = append(body, "")
			continue
		}
		if n.indent <= parent || indent >= 0 && n.indent < indent {
			break
		}
		if indent < 0 {
			indent = n.indent
		}
		body = append(body, n.raw[indent:])
	}
	trailing := 0
	for len(body) > 0 && body[len(body)-1] == "" {
		body, trailing = body[:len(body)-1], trailing+1
	}
	var text string
	if header[0] == '|' {
		text = strings.Join(body, "\n")
	} else {
		var b strings.Builder
		for i, line := range body {
			switch {
			case i == 0, line != "" && body[i-1] == "":
			case line == "":
				b.WriteString("\n")
			default:
				b.WriteString(" ")
			}
			b.WriteString(line)
		}
		text = b.String()
	}
	switch {
	case len(body) == 0 || chomp == "-":
	case chomp == "+":
		text += strings.Repeat("\n", trailing+1)
	default:
		text += "\n"
	}
	return text, nil
}

// stripComment drops a # comment (at the start, or after a space, outside
// quotes) and trailing spaces.
func stripComment(s string) string {
	var quote byte
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case quote == '"' && c == '\\':
			i++
		case quote != 0:
			if c == quote {
				quote = 0
			}
		case (c == '"' || c == '\'') && (i == 0 || strings.IndexByte(" :,[{-", s[i-1]) >= 0):
			quote = c
		case c == '#' && (i == 0 || s[i-1] == ' '):
			return strings.TrimRight(s[:i], " ")
		}
	}
	return strings.TrimRight(s, " ")
}

// quoteEnd returns the index just past the quoted string at the start of
// s, or -1 if it is not closed.
func quoteEnd(s string) int {
	q := s[0]
	for i := 1; i < len(s); i++ {
		switch {
		case q == '"' && s[i] == '\\':
			i++
		case s[i] == q && q == '\'' && i+1 < len(s) && s[i+1] == '\'':
			i++
		case s[i] == q:
			return i + 1
		}
	}
	return -1
}

// unquote decodes a double-quoted (JSON escapes) or single-quoted (” is
// ') string.
func unquote(s string) (string, error) {
	if s[0] == '\'' {
		return strings.ReplaceAll(s[1:len(s)-1], "''", "'"), nil
	}
	var out string
	if err := json.Unmarshal([]byte(s), &out); err != nil {
		return "", fmt.Errorf("bad double-quoted string %s: %w", s, err)
	}
	return out, nil
}

var (
	intPattern   = regexp.MustCompile(`^[-+]?[0-9]+$`)
	floatPattern = regexp.MustCompile(`^[-+]?([0-9]+\.[0-9]*|\.[0-9]+|[0-9]+)([eE][-+]?[0-9]+)?$`)
)

// plain types an unquoted scalar as YAML 1.2's core schema does.
func plain(s string) any {
	switch s {
	case "", "~", "null", "Null", "NULL":
		return nil
	case "true", "True", "TRUE":
		return true
	case "false", "False", "FALSE":
		return false
	}
	if intPattern.MatchString(s) {
		if n, err := strconv.ParseInt(s, 10, 64); err == nil {
			return n
		}
	}
	if floatPattern.MatchString(s) {
		if f, err := strconv.ParseFloat(s, 64); err == nil {
			return f
		}
	}
	return s
}

// flow parses a one-line flow collection such as {file: a.md, n: [1, 2]}.
type flow struct {
	s string
	i int
}

func (f *flow) skip() {
	for f.i < len(f.s) && f.s[f.i] == ' ' {
		f.i++
	}
}

func (f *flow) value() (any, error) {
	f.skip()
	if f.i == len(f.s) {
		return nil, fmt.Errorf("unexpected end of line")
	}
	switch f.s[f.i] {
	case '{':
		return f.collection('}')
	case '[':
		return f.collection(']')
	case '"', '\'':
		end := quoteEnd(f.s[f.i:])
		if end < 0 {
			return nil, fmt.Errorf("a quote is left open")
		}
		v, err := unquote(f.s[f.i : f.i+end])
		f.i += end
		return v, err
	}
	start := f.i
	for f.i < len(f.s) && !strings.ContainsRune(",]}", rune(f.s[f.i])) {
		f.i++
	}
	return plain(strings.TrimSpace(f.s[start:f.i])), nil
}

func (f *flow) collection(close byte) (any, error) {
	f.i++
	m, list := map[string]any{}, []any{}
	for {
		f.skip()
		if f.i < len(f.s) && f.s[f.i] == close {
			f.i++
			if close == '}' {
				return m, nil
			}
			return list, nil
		}
		if close == '}' {
			k, err := f.key()
			if err != nil {
				return nil, err
			}
			if m[k], err = f.value(); err != nil {
				return nil, err
			}
		} else {
			v, err := f.value()
			if err != nil {
				return nil, err
			}
			list = append(list, v)
		}
		f.skip()
		switch {
		case f.i < len(f.s) && f.s[f.i] == ',':
			f.i++
		case f.i < len(f.s) && f.s[f.i] == close:
		default:
			return nil, fmt.Errorf("want , or %c", close)
		}
	}
}

func (f *flow) key() (string, error) {
	f.skip()
	var k string
	if f.i < len(f.s) && (f.s[f.i] == '"' || f.s[f.i] == '\'') {
		v, err := f.value()
		if err != nil {
			return "", err
		}
		k = v.(string)
	} else {
		start := f.i
		for f.i < len(f.s) && !strings.ContainsRune(":,}", rune(f.s[f.i])) {
			f.i++
		}
		k = strings.TrimSpace(f.s[start:f.i])
	}
	f.skip()
	if f.i == len(f.s) || f.s[f.i] != ':' {
		return "", fmt.Errorf("want key: value in {…}")
	}
	f.i++
	return k, nil
}

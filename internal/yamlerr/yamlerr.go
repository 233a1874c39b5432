package yamlerr

import (
	"errors"
	"regexp"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// A Problem is one problem of a YAML error: its 1-based line, 0 when
// neither the error nor the text says where it is, and its message
// without yaml's "yaml: " and "line N: " prefixes, for a message of the
// form file:line: invalid YAML: message.
type Problem struct {
	Line int
	Msg  string
}

var (
	lineRE   = regexp.MustCompile(`^line (\d+): (.*)$`)
	anchorRE = regexp.MustCompile(`^unknown anchor '(.*)' referenced$`)
)

// parserProblems are the messages of yaml's parser (parserc.go), whose
// lines count from 0; its scanner's count from 1.
var parserProblems = []string{
	"did not find expected ", // <document start>, node content, key, '-' indicator, ',' or ']', ',' or '}'
	"found undefined tag handle",
	"found duplicate %YAML directive",
	"found duplicate %TAG directive",
	"found incompatible YAML document",
}

// Syntax places err, an error of reading src into a yaml.Node
// (yaml.Unmarshal or a Decoder's Decode into a Node): a syntax error, an
// unknown alias or a second document. yaml names the line of the context
// of a syntax error (where the quote, bracket or mapping it is in opens),
// or where it found the problem when the context is on the first line;
// it counts from 1 for its scanner and from 0 for its parser, and leaves
// the line out when it is 0, so an error without one is on the first
// line. An unknown alias, which yaml reports without a line, is placed at
// its first use in src; a tab that breaks the indentation, which yaml
// places at the scalar before it, at the line of the tab.
func Syntax(err error, src []byte) Problem {
	msg := strings.TrimPrefix(err.Error(), "yaml: ")
	m := lineRE.FindStringSubmatch(msg)
	if m == nil {
		if a := anchorRE.FindStringSubmatch(msg); a != nil {
			return Problem{Line: aliasLine(src, a[1]), Msg: msg}
		}
		return Problem{Line: 1, Msg: msg}
	}
	line, _ := strconv.Atoi(m[1])
	msg = m[2]
	if isParserProblem(msg) {
		line++
	}
	if strings.Contains(msg, "tab character") {
		line = tabLine(src, line)
	}
	return Problem{Line: line, Msg: msg}
}

// Decode lists the problems of err, an error of decoding a yaml.Node into
// Go values (Node.Decode): one per entry of a *yaml.TypeError, each at the
// line of its node; any other error, which names no node, at line 0.
func Decode(err error) []Problem {
	te, ok := errors.AsType[*yaml.TypeError](err)
	if !ok {
		return []Problem{{Msg: strings.TrimPrefix(err.Error(), "yaml: ")}}
	}
	out := make([]Problem, len(te.Errors))
	for i, msg := range te.Errors {
		out[i] = Problem{Msg: msg}
		if m := lineRE.FindStringSubmatch(msg); m != nil {
			out[i].Line, _ = strconv.Atoi(m[1])
			out[i].Msg = m[2]
		}
	}
	return out
}

func isParserProblem(msg string) bool {
	for _, p := range parserProblems {
		if strings.HasPrefix(msg, p) {
			return true
		}
	}
	return false
}

// aliasLine is the first line of src that uses the alias *anchor, or 0.
func aliasLine(src []byte, anchor string) int {
	use := regexp.MustCompile(`\*` + regexp.QuoteMeta(anchor) + `([\s,\]}]|$)`)
	for i, l := range strings.Split(string(src), "\n") {
		if use.MatchString(l) {
			return i + 1
		}
	}
	return 0
}

// tabLine is the first line from line on whose indentation holds a tab,
// or line if there is none.
func tabLine(src []byte, line int) int {
	lines := strings.Split(string(src), "\n")
	for l := max(line, 1); l <= len(lines); l++ {
		text := lines[l-1]
		if indent := text[:len(text)-len(strings.TrimLeft(text, " \t"))]; strings.Contains(indent, "\t") {
			return l
		}
	}
	return line
}

package skill

import (
	"path"
	"regexp"
	"slices"
	"strings"
)

// A part is one simple command of a shell line, as the tool rules and the
// evidence see it: its words with quotes and backslashes removed, joined by
// single spaces, after what only decorates a command is taken off the
// front (keywords such as if and do, NAME=value assignments, and the
// wrappers env, command, builtin, exec, nohup, time and nice).
type part struct {
	text string // the words joined by single spaces
	// base is text with the program's directory removed
	// (/usr/bin/git commit → git commit); "" when it has none.
	base string
	// op is the operator after the part at its level: &&, ||, ;, |, &,
	// a newline, or "" at the end.
	op string
	// from says where the part was found: fromLine, fromSubst (inside
	// $(…), `…`, <(…) or >(…), which runs), fromScript (the script of a
	// sh -c or eval, whose wrapper is its own part).
	from int
}

const (
	fromLine = iota
	fromSubst
	fromScript
)

// maxDepth bounds the nesting of substitutions and sh -c scripts read; a
// deeper one is left as text in the part that holds it.
const maxDepth = 8

// shellParts splits a command line into its simple commands: at &&, ||, ;,
// |, &, newlines and parentheses outside quotes, with the commands inside
// $(…), `…`, <(…), >(…) and the scripts of sh -c / bash -c / eval (each
// read once more, to maxDepth) as parts of their own. Here-document bodies
// are skipped, comments dropped, line continuations joined.
//
// It is not a shell: parameter expansion ($X, ${X}), aliases, functions,
// globbing and brace expansion are not performed, so a command named by a
// variable is matched as written, and redirections stay words of their part.
func shellParts(line string) []part {
	return splitShell(line, fromLine, 0)
}

func splitShell(line string, from, depth int) []part {
	l := &lexer{src: []rune(line), from: from, depth: depth}
	l.run()
	return l.out
}

type lexer struct {
	src         []rune
	i           int
	from, depth int
	word        strings.Builder
	inWord      bool // a word has begun, even an empty quoted one
	words       []string
	heredocs    []heredoc // delimiters whose bodies begin after this line
	out         []part
	nested      []part // parts found inside the current part's words
}

type heredoc struct {
	delim string
	tabs  bool // <<-: the body's leading tabs are stripped
}

func (l *lexer) peek(off int) rune {
	if l.i+off < len(l.src) {
		return l.src[l.i+off]
	}
	return 0
}

func (l *lexer) endWord() {
	if l.inWord {
		l.words = append(l.words, l.word.String())
	}
	l.word.Reset()
	l.inWord = false
}

// endPart closes the current simple command, followed by operator op.
func (l *lexer) endPart(op string) {
	l.endWord()
	if p, ok := makePart(l.words, op, l.from); ok {
		l.out = append(l.out, p)
		l.out = append(l.out, l.scripts(l.words)...)
	} else if n := len(l.out); n > 0 && l.out[n-1].from == l.from && op != "" {
		// an empty part (`fi`, `}`) passes its operator on
		l.out[n-1].op = op
	}
	l.out = append(l.out, l.nested...)
	l.words, l.nested = nil, nil
}

func (l *lexer) run() {
	for l.i < len(l.src) {
		c := l.src[l.i]
		switch {
		case c == '\\':
			if l.peek(1) == '\n' {
				l.i += 2
				continue
			}
			if l.i+1 < len(l.src) {
				l.word.WriteRune(l.src[l.i+1])
			}
			l.inWord = true
			l.i += 2
		case c == '\'':
			end := indexFrom(l.src, l.i+1, '\'')
			l.word.WriteString(string(l.src[l.i+1 : end]))
			l.inWord = true
			l.i = end + 1
		case c == '"':
			l.doubleQuoted()
		case c == '$' && l.peek(1) == '(':
			l.substitution(l.i + 1)
		case c == '`':
			l.backquoted()
		case (c == '<' || c == '>') && l.peek(1) == '(' && !l.inWord:
			l.substitution(l.i + 1)
		case c == '<' && l.peek(1) == '<' && l.peek(2) != '<':
			l.heredocStart()
		case c == ' ' || c == '\t' || c == '\r':
			l.endWord()
			l.i++
		case c == '#' && !l.inWord:
			for l.i < len(l.src) && l.src[l.i] != '\n' {
				l.i++
			}
		case c == '\n':
			l.endPart("\n")
			l.i++
			l.skipHeredocs()
		case c == '&' && (l.peek(1) == '>' || strings.HasSuffix(l.word.String(), ">") || strings.HasSuffix(l.word.String(), "<")):
			// &>file, 2>&1, <&3: a redirection, not an operator
			l.word.WriteRune(c)
			l.inWord = true
			l.i++
		case c == '|' && strings.HasSuffix(l.word.String(), ">"):
			l.word.WriteRune(c) // >| clobbers
			l.i++
		case c == ';' || c == '&' || c == '|' || c == '(' || c == ')':
			op := string(c)
			if n := l.peek(1); (c == '&' || c == '|' || c == ';') && (n == c || c == '|' && n == '&') {
				op += string(n)
			}
			l.endPart(op)
			l.i += len([]rune(op))
		default:
			l.word.WriteRune(c)
			l.inWord = true
			l.i++
		}
	}
	l.endPart("")
}

// doubleQuoted reads "…", in which a backslash escapes only $ ` " \ and a
// newline, and $(…) and `…` still run.
func (l *lexer) doubleQuoted() {
	l.inWord = true
	l.i++
	for l.i < len(l.src) && l.src[l.i] != '"' {
		c := l.src[l.i]
		switch {
		case c == '\\' && strings.ContainsRune("$`\"\\\n", l.peek(1)):
			if l.peek(1) != '\n' {
				l.word.WriteRune(l.peek(1))
			}
			l.i += 2
		case c == '$' && l.peek(1) == '(':
			l.substitution(l.i + 1)
		case c == '`':
			l.backquoted()
		default:
			l.word.WriteRune(c)
			l.i++
		}
	}
	l.i++ // the closing quote, or past the end
}

// substitution reads the parenthesised command at open (the index of its
// "("), writes it to the current word as written, and reads its inside as
// parts of their own. $((…)) is arithmetic and runs nothing.
func (l *lexer) substitution(open int) {
	end := closeParen(l.src, open)
	start := l.i
	if open+1 < len(l.src) && l.src[open+1] == '(' && l.src[start] == '$' {
		end = closeParen(l.src, open+1) + 1 // $(( … ))
	} else if l.depth < maxDepth {
		l.nested = append(l.nested, splitShell(string(l.src[open+1:min(end, len(l.src))]), fromSubst, l.depth+1)...)
	}
	l.word.WriteString(string(l.src[start:min(end+1, len(l.src))]))
	l.inWord = true
	l.i = end + 1
}

// backquoted reads `…`, the old form of $(…).
func (l *lexer) backquoted() {
	end := l.i + 1
	for end < len(l.src) && l.src[end] != '`' {
		if l.src[end] == '\\' {
			end++
		}
		end++
	}
	inner := string(l.src[l.i+1 : min(end, len(l.src))])
	if l.depth < maxDepth {
		l.nested = append(l.nested, splitShell(strings.ReplaceAll(inner, "\\`", "`"), fromSubst, l.depth+1)...)
	}
	l.word.WriteString(string(l.src[l.i:min(end+1, len(l.src))]))
	l.inWord = true
	l.i = end + 1
}

// heredocStart reads <<WORD or <<-WORD: the operator and its delimiter stay
// a word of the part; the body, after the end of the line, is skipped.
func (l *lexer) heredocStart() {
	l.endWord()
	l.i += 2
	h := heredoc{}
	if l.peek(0) == '-' {
		h.tabs = true
		l.i++
	}
	for l.peek(0) == ' ' || l.peek(0) == '\t' {
		l.i++
	}
	var d strings.Builder
	for l.i < len(l.src) && !strings.ContainsRune(" \t\n;&|()<>", l.src[l.i]) {
		if c := l.src[l.i]; c != '\'' && c != '"' && c != '\\' {
			d.WriteRune(c)
		}
		l.i++
	}
	h.delim = d.String()
	l.words = append(l.words, "<<"+h.delim)
	if h.delim != "" {
		l.heredocs = append(l.heredocs, h)
	}
}

// skipHeredocs skips the bodies of the line's here-documents, each up to
// its delimiter line (or the end of the text).
func (l *lexer) skipHeredocs() {
	for _, h := range l.heredocs {
		for l.i < len(l.src) {
			end := indexFrom(l.src, l.i, '\n')
			line := string(l.src[l.i:end])
			l.i = end + 1
			if h.tabs {
				line = strings.TrimLeft(line, "\t")
			}
			if strings.TrimRight(line, "\r") == h.delim {
				break
			}
		}
	}
	l.heredocs = nil
}

// scripts are the parts of the script a wrapper runs: sh -c SCRIPT (any
// of the usual shells, -c possibly among other one-letter options) or
// eval ARGS.
func (l *lexer) scripts(words []string) []part {
	words = strip(words)
	if len(words) == 0 || l.depth >= maxDepth {
		return nil
	}
	prog := path.Base(words[0])
	if prog == "eval" {
		return splitShell(strings.Join(words[1:], " "), fromScript, l.depth+1)
	}
	if !slices.Contains(shells, prog) {
		return nil
	}
	for i, w := range words[1:] {
		if len(w) > 1 && w[0] == '-' && w[1] != '-' && strings.Contains(w, "c") && i+2 < len(words) {
			return splitShell(words[i+2], fromScript, l.depth+1)
		}
	}
	return nil
}

// shells are the programs whose -c runs a script.
var shells = []string{"sh", "bash", "zsh", "dash", "ksh", "ash", "mksh", "fish"}

func makePart(words []string, op string, from int) (part, bool) {
	words = strip(words)
	if len(words) == 0 {
		return part{}, false
	}
	p := part{text: strings.Join(words, " "), op: op, from: from}
	if strings.Contains(words[0], "/") {
		p.base = strings.Join(append([]string{path.Base(words[0])}, words[1:]...), " ")
	}
	return p, true
}

// keywords open or close a compound command; what follows them is the
// command that runs.
var keywords = []string{"if", "then", "elif", "else", "fi", "do", "done", "while", "until", "!", "{", "}", "esac"}

var assignRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*\+?=`)

// strip takes off the front of a command's words what only decorates the
// command that runs: keywords, assignments and the wrappers env, command,
// builtin, exec, nohup, time and nice with their options.
func strip(words []string) []string {
	for len(words) > 0 {
		w := words[0]
		switch {
		case slices.Contains(keywords, w), assignRE.MatchString(w), w == "nohup":
			words = words[1:]
		case w == "env":
			words = skipOptions(words[1:], "uCS")
		case w == "command", w == "builtin", w == "time":
			words = skipOptions(words[1:], "")
		case w == "exec":
			words = skipOptions(words[1:], "a")
		case w == "nice":
			words = skipOptions(words[1:], "n")
		default:
			return words
		}
	}
	return words
}

// skipOptions drops leading options (and the value of those in withValue,
// written apart or joined), NAME=value words, and a "--".
func skipOptions(words []string, withValue string) []string {
	for len(words) > 0 {
		w := words[0]
		switch {
		case w == "--":
			return words[1:]
		case assignRE.MatchString(w):
			words = words[1:]
		case len(w) > 1 && w[0] == '-':
			words = words[1:]
			if len(w) == 2 && strings.ContainsRune(withValue, rune(w[1])) && len(words) > 0 {
				words = words[1:]
			}
		default:
			return words
		}
	}
	return words
}

// indexFrom is the index of r in s from i on, or len(s).
func indexFrom(s []rune, i int, r rune) int {
	for ; i < len(s); i++ {
		if s[i] == r {
			return i
		}
	}
	return len(s)
}

// closeParen is the index of the ")" that closes the "(" at open, skipping
// quoted text, or len(s)-1 when it is not closed.
func closeParen(s []rune, open int) int {
	depth := 0
	for i := open; i < len(s); i++ {
		switch s[i] {
		case '\\':
			i++
		case '\'':
			i = indexFrom(s, i+1, '\'')
		case '"':
			for i++; i < len(s) && s[i] != '"'; i++ {
				if s[i] == '\\' {
					i++
				}
			}
		case '(':
			depth++
		case ')':
			depth--
			if depth == 0 {
				return i
			}
		}
	}
	return len(s) - 1
}

package api

import "strings"

// OneLine is s on one line (every run of white space one space), cut to at
// most max runes with a trailing "…": how a list or a notice quotes what
// someone wrote.
func OneLine(s string, max int) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > max {
		return string(r[:max-1]) + "…"
	}
	return s
}

package skill

import (
	"strings"
)

// wild reports whether s matches the glob pattern, where * is any run of
// characters (slashes and spaces included) and ? is one character; every
// other character, [ and \ included, stands for itself. It is the matcher
// of tool names and shell commands: the two-pointer walk with one
// backtrack point is linear in practice and never exponential, so a long
// command costs the gate microseconds.
func wild(pattern, s string) bool {
	p, str := []rune(pattern), []rune(s)
	pi, si := 0, 0
	star, mark := -1, 0
	for si < len(str) {
		switch {
		case pi < len(p) && (p[pi] == '?' || p[pi] == str[si]):
			pi++
			si++
		case pi < len(p) && p[pi] == '*':
			star, mark = pi, si
			pi++
		case star >= 0:
			pi = star + 1
			mark++
			si = mark
		default:
			return false
		}
	}
	for pi < len(p) && p[pi] == '*' {
		pi++
	}
	return pi == len(p)
}

// matchPath reports whether a slash-separated path matches a file glob:
// * and ? stay within one directory, a ** element matches any number of
// directories (none included), and a pattern without a slash matches the
// path's last element, as in .gitignore (`*_test.go` anywhere).
func matchPath(pattern, p string) bool {
	p = strings.TrimPrefix(p, "./")
	if !strings.Contains(pattern, "/") {
		return wild(pattern, p[strings.LastIndex(p, "/")+1:])
	}
	return matchElems(strings.Split(strings.TrimPrefix(pattern, "./"), "/"), strings.Split(p, "/"))
}

func matchElems(ps, ss []string) bool {
	for len(ps) > 0 {
		if ps[0] == "**" {
			for i := 0; i <= len(ss); i++ {
				if matchElems(ps[1:], ss[i:]) {
					return true
				}
			}
			return false
		}
		if len(ss) == 0 || !wild(ps[0], ss[0]) {
			return false
		}
		ps, ss = ps[1:], ss[1:]
	}
	return len(ss) == 0
}

// isGlob says whether s holds a wildcard.
func isGlob(s string) bool { return strings.ContainsAny(s, "*?") }

package sandbox

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// Policy is what one run's processes may reach: the daemon decides it
// (agent config, the run's directories, what its backend needs) and sends
// it with the run; the kernel enforces it. Paths are absolute and clean; a
// path grants what lies beneath it.
type Policy struct {
	// Read may be read and executed.
	Read []string `json:"read,omitempty"`
	// Write may also be written, created, removed and renamed within.
	Write []string `json:"write,omitempty"`
	// Net is the TCP the run's processes may reach: the daemon's port and
	// the model endpoints its backend needs, and what the agent's policy
	// grants.
	Net Net `json:"net"`
	// ToolNet is the TCP a command the agent runs through a shell tool
	// may reach (run_shell, the mock's shell): only what the agent's
	// policy grants, never the daemon's port by default.
	ToolNet Net `json:"tool_net"`
}

// Net is a TCP rule: every port (All), or connect to these Ports only.
// Landlock filters TCP by port, not by host, and nothing here may bind a
// TCP port unless All.
type Net struct {
	All   bool     `json:"all,omitempty"`
	Ports []uint16 `json:"ports,omitempty"`
}

// String says the rule as status and the transcript show it.
func (n Net) String() string {
	switch {
	case n.All:
		return "all"
	case len(n.Ports) == 0:
		return "none"
	}
	ports := make([]string, len(n.Ports))
	for i, p := range n.Ports {
		ports[i] = strconv.Itoa(int(p))
	}
	return "tcp " + strings.Join(ports, ",")
}

// allows reports whether port may be reached under n.
func (n Net) allows(port uint16) bool { return n.All || slices.Contains(n.Ports, port) }

// within reports whether n grants nothing base does not.
func (n Net) within(base Net) bool {
	if base.All {
		return true
	}
	if n.All {
		return false
	}
	for _, p := range n.Ports {
		if !slices.Contains(base.Ports, p) {
			return false
		}
	}
	return true
}

// Within reports whether everything p grants is granted by base, so that
// a process confined by base can narrow itself to exactly p (Landlock
// layers only take access away). A warm spare started under base can serve
// a run of policy p only then.
func (p Policy) Within(base Policy) bool {
	for _, path := range p.Write {
		if !beneathAny(path, base.Write) {
			return false
		}
	}
	for _, path := range p.Read {
		if !beneathAny(path, base.Read) && !beneathAny(path, base.Write) {
			return false
		}
	}
	return p.Net.within(base.Net) && p.ToolNet.within(base.ToolNet)
}

// CanRead reports whether path (absolute) may be read under p.
func (p Policy) CanRead(path string) bool {
	return beneathAny(path, p.Read) || beneathAny(path, p.Write)
}

// CanWrite reports whether path (absolute) may be written under p.
func (p Policy) CanWrite(path string) bool { return beneathAny(path, p.Write) }

// IsZero reports a policy that was never set: a run without a sandbox.
func (p Policy) IsZero() bool {
	return len(p.Read) == 0 && len(p.Write) == 0 && !p.Net.All && len(p.Net.Ports) == 0 && !p.ToolNet.All && len(p.ToolNet.Ports) == 0
}

// Validate checks that every path is absolute and clean and every port
// is a port, so a policy from the wire cannot mean something else than
// it says.
func (p Policy) Validate() error {
	var errs []error
	for _, list := range [][]string{p.Read, p.Write} {
		for _, path := range list {
			if !filepath.IsAbs(path) || filepath.Clean(path) != path {
				errs = append(errs, fmt.Errorf("sandbox path %q is not absolute and clean", path))
			}
		}
	}
	for _, n := range []Net{p.Net, p.ToolNet} {
		if slices.Contains(n.Ports, 0) {
			errs = append(errs, errors.New("sandbox port 0 is not a port"))
		}
	}
	return errors.Join(errs...)
}

// beneathAny reports whether path is one of dirs or beneath one of them.
func beneathAny(path string, dirs []string) bool {
	for _, d := range dirs {
		if path == d || strings.HasPrefix(path, d+"/") || d == "/" {
			return true
		}
	}
	return false
}

// Status is whether this machine's kernel can confine runs, and how far.
type Status struct {
	// ABI is the kernel's Landlock ABI version; 0 when it has none.
	ABI int
	// Why says why runs cannot be confined; empty when they can.
	Why string
}

// Available reports whether runs can be confined.
func (s Status) Available() bool { return s.Why == "" }

// String is the sandbox as status shows it: "landlock ABI 7", or
// "unavailable: <why>".
func (s Status) String() string {
	if !s.Available() {
		return "unavailable: " + s.Why
	}
	if s.ABI < netABI {
		return fmt.Sprintf("landlock ABI %d (files only: TCP rules need ABI %d)", s.ABI, netABI)
	}
	return fmt.Sprintf("landlock ABI %d", s.ABI)
}

// netABI is the first Landlock ABI with TCP port rules.
const netABI = 4

// explainLimit bounds the refusal lines one output yields.
const explainLimit = 8

// Explain reads what a command printed and returns a line for each path or
// TCP port it was refused (EACCES, EPERM) that lies outside p, saying so,
// for the run's transcript. dir resolves relative paths. Output that
// names no such path or port yields nothing: a refusal for another reason
// (a file's mode) is not the sandbox's.
func Explain(p Policy, tool bool, dir, output string) []string {
	var out []string
	seen := map[string]bool{}
	add := func(line string) {
		if !seen[line] && len(out) < explainLimit {
			seen[line] = true
			out = append(out, line)
		}
	}
	net := p.Net
	if tool {
		net = p.ToolNet
	}
	for line := range strings.Lines(output) {
		if !refused(line) {
			continue
		}
		if port, ok := portIn(line); ok && (udp(line) || !net.allows(port)) {
			proto := "TCP"
			if udp(line) {
				proto = "UDP" // refused only where no port is granted
			}
			add(fmt.Sprintf("%s port %d is outside the agent's sandbox (network: %s)", proto, port, net))
			continue
		}
		for _, path := range pathsIn(withoutShell(line), dir) {
			switch {
			case !p.CanRead(path):
				add(fmt.Sprintf("%s is outside the agent's sandbox (not readable)", path))
			case !p.CanWrite(path) && writing(line):
				add(fmt.Sprintf("%s is outside the agent's sandbox (read-only)", path))
			}
		}
	}
	return out
}

// shellPrefix is how a shell starts its own error lines: dash's
// "/bin/sh: 1: " and bash's "/bin/bash: line 1: ". The shell's path is
// not what was refused.
var shellPrefix = regexp.MustCompile(`^\S+: (line )?[0-9]+: `)

// withoutShell is line without its shell's prefix.
func withoutShell(line string) string { return shellPrefix.ReplaceAllString(line, "") }

// refused reports a line that tells of EACCES or EPERM.
func refused(line string) bool {
	return strings.Contains(line, "Permission denied") || strings.Contains(line, "Operation not permitted") ||
		strings.Contains(line, "EACCES") || strings.Contains(line, "EPERM") || strings.Contains(line, "permission denied")
}

// writing guesses whether a refusal line is about a write.
func writing(line string) bool {
	l := strings.ToLower(line)
	for _, w := range []string{"cannot create", "can't create", "write", "touch", "mkdir", "cannot open", "lock", "cannot remove", "rm:", "cp:", "mv:", "tee:"} {
		if strings.Contains(l, w) {
			return true
		}
	}
	return false
}

// udp reports a refusal line about a UDP socket.
func udp(line string) bool { return strings.Contains(line, "/dev/udp/") }

// portIn finds a port in a refusal line: "port 5432", ":5432",
// "/dev/tcp/host/5432", "/dev/udp/host/53".
func portIn(line string) (uint16, bool) {
	l := strings.ToLower(line)
	if !strings.Contains(l, "connect") && !strings.Contains(l, "port") && !strings.Contains(l, "/dev/tcp/") && !strings.Contains(l, "/dev/udp/") && !strings.Contains(l, "dial") {
		return 0, false
	}
	if i := strings.Index(l, "/dev/udp/"); i >= 0 {
		l = l[:i] + "/dev/tcp/" + l[i+len("/dev/udp/"):] // the same shape
	}
	for _, marker := range []string{"port ", "/dev/tcp/", ":"} {
		for rest := l; ; {
			i := strings.Index(rest, marker)
			if i < 0 {
				break
			}
			rest = rest[i+len(marker):]
			if marker == "/dev/tcp/" { // host/port
				if j := strings.IndexByte(rest, '/'); j >= 0 {
					rest = rest[j+1:]
				}
			}
			n := 0
			for n < len(rest) && rest[n] >= '0' && rest[n] <= '9' {
				n++
			}
			if v, err := strconv.ParseUint(rest[:n], 10, 16); err == nil && v > 0 && (n == len(rest) || !isHostChar(rest[n])) {
				return uint16(v), true
			}
		}
	}
	return 0, false
}

func isHostChar(c byte) bool { return c == '.' || (c >= 'a' && c <= 'z') }

// pathsIn finds the paths a refusal line names: words that start with
// "/" (or, resolved against dir, "./", "../" and bare names before ":").
func pathsIn(line, dir string) []string {
	var out []string
	for _, f := range strings.FieldsFunc(line, func(r rune) bool {
		return r == ' ' || r == '\t' || r == '\n' || r == '\'' || r == '"' || r == '`' || r == '(' || r == ')' || r == ','
	}) {
		f = strings.TrimSuffix(f, ":")
		switch {
		case strings.HasPrefix(f, "/dev/tcp/"), strings.HasPrefix(f, "/dev/udp/"):
			continue
		case strings.HasPrefix(f, "/"):
		case dir != "" && (strings.HasPrefix(f, "./") || strings.HasPrefix(f, "../")):
			f = filepath.Join(dir, f)
		default:
			continue
		}
		out = append(out, filepath.Clean(f))
	}
	return out
}

// home is the user's home directory, for ~ in paths; "" when unknown.
func home() string {
	h, _ := os.UserHomeDir()
	return h
}

// ExpandHome turns a leading ~ or ~/ into the user's home directory.
func ExpandHome(path string) string {
	if path == "~" || strings.HasPrefix(path, "~/") {
		if h := home(); h != "" {
			return filepath.Join(h, strings.TrimPrefix(path, "~"))
		}
	}
	return path
}

// Package sandboxtest helps a backend's tests try its tool commands in a
// real sandbox: a skip where the kernel cannot confine, a TCP listener to
// reach, a shell line that reaches it, a policy that grants a shell what
// it needs, and a probe (Attack, MaybeAttack: a test binary run as a
// confined command) that tries the ways around the sandbox the kernel
// offers: io_uring sockets, Multipath TCP, UDP, raw sockets, device
// nodes, typing into a terminal, abstract unix sockets.
package sandboxtest

import (
	"fmt"
	"net"
	"os/exec"
	"testing"

	"github.com/agent-worker/agent-worker/sdk/sandbox"
)

// NeedLandlock skips a test on a kernel that cannot confine runs with
// TCP rules, saying why.
func NeedLandlock(t testing.TB) {
	t.Helper()
	st := sandbox.Probe()
	if !st.Available() {
		t.Skipf("no sandbox here: %s", st.Why)
	}
	if st.ABI < 4 {
		t.Skipf("Landlock ABI %d has no TCP rules (ABI 4 does)", st.ABI)
	}
}

// ConnectLine is a shell line that connects to port on 127.0.0.1 with
// bash and prints "connected".
func ConnectLine(t testing.TB, port uint16) string {
	t.Helper()
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skipf("bash, for /dev/tcp, is not installed: %v", err)
	}
	return fmt.Sprintf("%s -c 'exec 3<>/dev/tcp/127.0.0.1/%d && echo connected'", bash, port)
}

// Listen returns the port of a TCP listener on 127.0.0.1 that takes
// connections until the test ends.
func Listen(t testing.TB) uint16 {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	go closeEach(l)
	return uint16(l.Addr().(*net.TCPAddr).Port)
}

// AbstractName is the abstract unix socket the "abstract-unix" attack
// connects to for port.
func AbstractName(port uint16) string { return fmt.Sprintf("@agent-worker-sandboxtest-%d", port) }

// ListenAbstract listens on AbstractName(port), outside any sandbox,
// until the test ends.
func ListenAbstract(t testing.TB, port uint16) {
	t.Helper()
	l, err := net.Listen("unix", AbstractName(port))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	go closeEach(l)
}

// Policy grants what a shell needs and writes in dir; the plugin may
// reach port, its tool commands nothing.
func Policy(dir string, port uint16) sandbox.Policy {
	return sandbox.Policy{
		Read:  []string{"/usr", "/bin", "/lib", "/lib64", "/etc", "/proc", "/dev/urandom"},
		Write: []string{dir, "/dev/null"},
		Net:   sandbox.Net{Ports: []uint16{port}},
	}
}

// closeEach takes connections on l and closes them, until l is closed.
func closeEach(l net.Listener) {
	for {
		c, err := l.Accept()
		if err != nil {
			return
		}
		c.Close()
	}
}

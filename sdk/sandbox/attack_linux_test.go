//go:build linux

package sandbox_test

import (
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/agent-worker/agent-worker/sdk/sandbox"
	"github.com/agent-worker/agent-worker/sdk/sandbox/sandboxtest"
)

// The test binary is also the confined probe (sandboxtest.MaybeAttack).
func TestMain(m *testing.M) {
	sandboxtest.MaybeAttack()
	os.Exit(m.Run())
}

// attack runs this test binary as the probe of names against port, in
// dir, started by start (unconfined, StartConfined or RunTool), and
// returns its lines by attack.
func attack(t *testing.T, dir string, port uint16, names []string, start func(*exec.Cmd) error) map[string]string {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe)
	cmd.Dir = dir
	cmd.Env = []string{sandboxtest.AttackEnv + "=" + strings.Join(names, ","), sandboxtest.AttackPortEnv + "=" + strconv.Itoa(int(port))}
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := start(cmd); err != nil {
		t.Fatalf("probe: %v\n%s", err, out.String())
	}
	got := map[string]string{}
	for line := range strings.Lines(out.String()) {
		name, rest, _ := strings.Cut(strings.TrimSpace(line), ": ")
		got[name] = rest
	}
	return got
}

// A confined process is refused what Landlock alone let through on this
// kernel: a socket made through io_uring (IORING_OP_SOCKET) that reached
// a local port over Multipath TCP and UDP, Multipath TCP and raw sockets,
// a device node, and an abstract unix socket outside the layer; every
// confined layer, a plugin's and a tool command's. A FIFO and a pseudo-terminal of its own still work. The same
// probe run unconfined reaches the ports, so the probe itself works.
func TestConfinedProcessAttacks(t *testing.T) {
	t.Parallel()
	sandboxtest.NeedLandlock(t)
	if b, err := os.ReadFile("/proc/sys/kernel/io_uring_disabled"); err == nil && strings.TrimSpace(string(b)) != "0" {
		t.Skipf("io_uring is disabled here (kernel.io_uring_disabled=%s): the attack cannot be shown", strings.TrimSpace(string(b)))
	}
	port := sandboxtest.Listen(t)
	udp, err := net.ListenPacket("udp", "127.0.0.1:"+strconv.Itoa(int(port)))
	if err != nil {
		t.Fatal(err)
	}
	defer udp.Close()
	sandboxtest.ListenAbstract(t, port)
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	ringAttacks := []string{"io_uring", "io_uring-tcp", "io_uring-udp", "io_uring-mptcp", "abstract-unix"}

	free := t.TempDir()
	unconfined := attack(t, free, port, ringAttacks, (*exec.Cmd).Run)
	for _, name := range []string{"io_uring", "io_uring-tcp", "io_uring-udp", "abstract-unix"} {
		if !strings.HasPrefix(unconfined[name], "reached") {
			t.Fatalf("unconfined, the probe's %s does not work, so it proves nothing confined: %q", name, unconfined[name])
		}
	}
	t.Logf("unconfined: %v", unconfined)

	all := append(ringAttacks, "mptcp", "raw", "udp", "tcp", "mknod-block", "mknod-char", "mkfifo", "pty", "tiocsti")
	const eperm, eacces = "operation not permitted", "permission denied"
	// A plugin's layer: TCP to another port only (UDP is not filtered
	// where a port is granted), its directory, its terminals.
	dir := t.TempDir()
	p := sandboxtest.Policy(dir, port+1)
	p.Read = append(p.Read, exe)
	p.Write = append(p.Write, "/dev/ptmx", "/dev/pts")
	got := attack(t, dir, port, all, func(cmd *exec.Cmd) error {
		release, err := sandbox.StartConfined(p, cmd.Start)
		if err != nil {
			return err
		}
		defer release()
		return cmd.Wait()
	})
	want := map[string]string{
		"io_uring": "refused: io_uring_setup: " + eperm, "io_uring-tcp": "refused: io_uring_setup: " + eperm,
		"io_uring-udp": "refused: io_uring_setup: " + eperm, "io_uring-mptcp": "refused: io_uring_setup: " + eperm,
		"mptcp": "refused: socket: " + eacces, "raw": "refused: socket: " + eacces, "tcp": "refused: connect: " + eacces,
		"udp": "reached", "mknod-block": "refused: " + eperm, "mknod-char": "refused: " + eperm, "mkfifo": "reached",
		"pty": "reached", "tiocsti": "refused: TIOCSTI: " + eperm,
		"abstract-unix": "refused: connect: " + eperm, // Landlock's scope (ABI 6)
	}
	for _, name := range all {
		if !strings.HasPrefix(got[name], want[name]) {
			t.Errorf("a plugin's layer: %s: %q, want %q…", name, got[name], want[name])
		}
	}
	for _, node := range []string{"disk", "mem"} {
		if _, err := os.Lstat(filepath.Join(dir, node)); err == nil {
			t.Errorf("the confined process made the device node %s", node)
		}
	}

	// A tool command's layer: no port at all, so no IPv4 or IPv6 socket.
	got = attack(t, dir, port, []string{"io_uring-udp", "udp", "tcp", "mptcp"}, func(cmd *exec.Cmd) error { return sandbox.RunTool(cmd, p) })
	for name, w := range map[string]string{"io_uring-udp": "refused: io_uring_setup: " + eperm, "udp": "refused: socket: " + eacces,
		"tcp": "refused: socket: " + eacces, "mptcp": "refused: socket: " + eacces} {
		if !strings.HasPrefix(got[name], w) {
			t.Errorf("a tool command's layer: %s: %q, want %q…", name, got[name], w)
		}
	}
}

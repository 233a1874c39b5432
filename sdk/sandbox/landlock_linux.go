//go:build linux

package sandbox

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"sync"
	"syscall"

	"github.com/landlock-lsm/go-landlock/landlock"
	ll "github.com/landlock-lsm/go-landlock/landlock/syscall"
	"golang.org/x/sys/unix"
)

// Probe asks the kernel which Landlock ABI it offers (the LSM may be
// built in but not enabled, or blocked by a container's seccomp filter).
func Probe() Status {
	v, err := ll.LandlockGetABIVersion()
	switch {
	case errors.Is(err, syscall.ENOSYS):
		return Status{Why: "the kernel has no Landlock (Linux 5.13 or later with CONFIG_SECURITY_LANDLOCK)"}
	case errors.Is(err, syscall.EOPNOTSUPP):
		return Status{Why: "Landlock is built into the kernel but not enabled (add landlock to the lsm= boot parameter)"}
	case errors.Is(err, syscall.EPERM):
		return Status{Why: "Landlock is blocked here (a container's seccomp filter refuses its system calls)"}
	case err != nil:
		return Status{Why: "Landlock: " + err.Error()}
	}
	return Status{ABI: v}
}

// fsAccess is every filesystem right the kernel knows, up to ABI 7.
var fsAccess = landlock.V7.BestEffort()

// config is the Landlock configuration of a layer: every filesystem right
// is handled (so only what a rule grants is allowed) unless files is
// false, TCP bind and connect unless net.All, and, when scoped, signals
// and abstract unix sockets never reach out of the layer. BestEffort
// drops what an older kernel cannot enforce.
func config(files bool, net Net, scoped bool) (landlock.Config, error) {
	var args []any
	if files {
		args = append(args, landlock.AccessFSSet(ll.AccessFSExecute|ll.AccessFSWriteFile|ll.AccessFSReadFile|ll.AccessFSReadDir|
			ll.AccessFSRemoveDir|ll.AccessFSRemoveFile|ll.AccessFSMakeChar|ll.AccessFSMakeDir|ll.AccessFSMakeReg|ll.AccessFSMakeSock|
			ll.AccessFSMakeFifo|ll.AccessFSMakeBlock|ll.AccessFSMakeSym|ll.AccessFSRefer|ll.AccessFSTruncate|ll.AccessFSIoctlDev))
	}
	if !net.All {
		args = append(args, landlock.AccessNetSet(ll.AccessNetBindTCP|ll.AccessNetConnectTCP))
	}
	if scoped {
		args = append(args, landlock.ScopedSet(ll.ScopeAbstractUnixSocket|ll.ScopeSignal))
	}
	c, err := landlock.NewConfig(args...)
	if err != nil {
		return landlock.Config{}, err
	}
	return c.BestEffort(), nil
}

// rules turns p into Landlock rules: a missing path is skipped (a
// directory the run has not made yet grants nothing), a file gets the
// rights that apply to files.
func rules(p Policy, net Net, files bool) []landlock.Rule {
	var out []landlock.Rule
	if files {
		for _, path := range p.Read {
			out = append(out, pathRule(path, false))
		}
		for _, path := range p.Write {
			out = append(out, pathRule(path, true))
		}
	}
	if !net.All {
		for _, port := range net.Ports {
			out = append(out, landlock.ConnectTCP(port))
		}
	}
	return out
}

// Rights a writable path grants: a directory everything but making
// device nodes (make-char, make-block: a root run made a node for the
// root disk) and device ioctls; a file what applies to files. Every
// right stays handled, so what is not granted is refused.
const (
	rwDir = ll.AccessFSExecute | ll.AccessFSWriteFile | ll.AccessFSReadFile | ll.AccessFSReadDir | ll.AccessFSRemoveDir |
		ll.AccessFSRemoveFile | ll.AccessFSMakeDir | ll.AccessFSMakeReg | ll.AccessFSMakeSock | ll.AccessFSMakeFifo |
		ll.AccessFSMakeSym | ll.AccessFSRefer | ll.AccessFSTruncate
	rwFile = ll.AccessFSExecute | ll.AccessFSWriteFile | ll.AccessFSReadFile | ll.AccessFSTruncate
)

// terminals may also take device ioctls where written: isatty, the
// window size, and making a pseudo-terminal (python's pty, script(1),
// a CLI that runs commands in a pty) need terminal ioctls; a run started
// without a terminal has none to reach. The two that type into a
// terminal, TIOCSTI and TIOCLINUX, are refused by the seccomp filter.
// Other devices (/dev/null, /dev/zero) need none.
var terminals = []string{"/dev/tty", "/dev/ptmx", "/dev/pts"}

func pathRule(path string, write bool) landlock.Rule {
	fi, err := os.Stat(path)
	isDir := err != nil || fi.IsDir()
	var r landlock.FSRule
	var ioctl landlock.AccessFSSet
	if write && beneathAny(path, terminals) {
		ioctl = ll.AccessFSIoctlDev
	}
	switch {
	case write && isDir:
		r = landlock.PathAccess(rwDir|ioctl, path)
	case write:
		r = landlock.PathAccess(rwFile|ioctl, path)
	case isDir:
		r = landlock.RODirs(path)
	default:
		r = landlock.ROFiles(path)
	}
	return r.IgnoreIfMissing()
}

// Restrict confines this whole process (every thread) and all it starts
// from now on to p. It is how a plugin narrows the base layer it was
// started under to its run's policy, before its backend sees the run.
func Restrict(p Policy) error {
	if err := p.Validate(); err != nil {
		return err
	}
	// A process the daemon started confined has no_new_privs on every
	// thread already (inherited): setting it again on all threads costs
	// as much as the restriction itself. Its layer, one domain for the
	// whole process, already keeps signals and abstract sockets inside;
	// this one must not scope them again, since applied thread by thread
	// it makes a sibling domain per thread, and a thread could then no
	// longer signal what another thread started (its own run's children).
	nnp, nerr := unix.PrctlRetInt(unix.PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0)
	confined := nerr == nil && nnp == 1
	c, err := config(true, p.Net, !confined)
	if err != nil {
		return err
	}
	fd, flags, err := c.NewRulesetFD(rules(p, p.Net, true)...)
	if err != nil {
		return fmt.Errorf("sandbox: %w", err)
	}
	if fd < 0 {
		return nil // nothing this kernel can enforce (BestEffort)
	}
	defer unix.Close(fd)
	if !confined {
		if err := ll.AllThreadsPrctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
			return fmt.Errorf("sandbox: no_new_privs: %w", err)
		}
	}
	if err := ll.AllThreadsLandlockRestrictSelf(fd, flags); err != nil {
		return fmt.Errorf("sandbox: restrict: %w", err)
	}
	if err := filter(p.Net, true); err != nil {
		return fmt.Errorf("sandbox: seccomp: %w", err)
	}
	return nil
}

// restrictThread confines the calling OS thread only, which the caller
// has locked and must never unlock (the runtime then ends the thread
// with its goroutine). A process forked from this thread, and a program
// it executes, inherit the layer.
func restrictThread(c landlock.Config, rs []landlock.Rule, net Net) error {
	fd, flags, err := c.NewRulesetFD(rs...)
	if err != nil {
		return fmt.Errorf("sandbox: %w", err)
	}
	if fd < 0 {
		return nil // nothing this kernel can enforce (BestEffort)
	}
	defer unix.Close(fd)
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("sandbox: no_new_privs: %w", err)
	}
	if err := filter(net, false); err != nil {
		return fmt.Errorf("sandbox: seccomp: %w", err)
	}
	if err := ll.LandlockRestrictSelf(fd, flags); err != nil {
		return fmt.Errorf("sandbox: restrict: %w", err)
	}
	return nil
}

// RunTool runs cmd (Start, then Wait) under a further layer that leaves
// it only the network p grants tool commands (ToolNet), whatever the
// plugin itself may reach: a command an agent runs through a shell tool
// must not talk to the daemon's port or a model endpoint with the run's
// credentials. The layer is made on an OS thread of its own, which ends
// with the command.
func RunTool(cmd *exec.Cmd, p Policy) error {
	if p.IsZero() || p.ToolNet.All {
		return cmd.Run()
	}
	c, err := config(false, p.ToolNet, true)
	if err != nil {
		return err
	}
	var runErr error
	release, err := onThread(c, rules(p, p.ToolNet, false), p.ToolNet, func() error { runErr = cmd.Run(); return nil })
	if err != nil {
		return err
	}
	release()
	return runErr
}

// StartConfined calls start (which starts a process, e.g. exec.Cmd.Start)
// on an OS thread of its own that is first confined to p, so the process
// and all it starts are confined from their first instruction, while the
// rest of the caller is not. The thread is kept until release is called:
// a child's parent-death signal (Pdeathsig) follows the thread that
// started it, so release only once the process is gone. It is how the
// daemon confines a plugin process before any plugin code runs.
func StartConfined(p Policy, start func() error) (release func(), err error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	c, err := config(true, p.Net, true)
	if err != nil {
		return nil, err
	}
	return onThread(c, rules(p, p.Net, true), p.Net, start)
}

// onThread runs fn on a new OS thread confined by the layer (c, rs) and
// parks the thread until release. Threads the runtime creates meanwhile
// come from its template thread, not this one (the runtime's rule for a
// locked thread), so nothing else of the process is confined.
func onThread(c landlock.Config, rs []landlock.Rule, net Net, fn func() error) (release func(), err error) {
	errc := make(chan error, 1)
	done := make(chan struct{})
	go func() {
		runtime.LockOSThread() // never unlocked: the runtime ends the thread with this goroutine
		if err := restrictThread(c, rs, net); err != nil {
			errc <- err
			return
		}
		errc <- fn()
		<-done
	}()
	if err := <-errc; err != nil {
		close(done)
		return nil, err
	}
	return sync.OnceFunc(func() { close(done) }), nil
}

package cli

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"time"

	"github.com/agent-worker/agent-worker/sdk/backend"
)

// Process is a CLI started with pipes both ways, for a protocol spoken
// over its stdio (ACP's JSON-RPC): the caller writes Stdin and reads
// Stdout; stderr goes line by line to the command's Stderr and is kept
// for the error. Like Run, the CLI runs in a process group of its own,
// which Stop kills whole.
type Process struct {
	// Stdin is the CLI's stdin; Stdout its stdout, which stays readable
	// until the CLI and everything it started have closed it.
	Stdin  io.WriteCloser
	Stdout io.ReadCloser

	name   string
	pgid   int
	tail   tailBuffer
	done   chan struct{}
	stderr sync.WaitGroup
	// waitErr is how the CLI exited; set before done closes.
	waitErr error
}

// Start starts c with its stdin and stdout as pipes to the caller; c.Stdout
// and c.IdleTimeout are not used (the caller reads the protocol). A CLI
// that cannot be started is a permanent error.
func Start(c Command) (*Process, error) {
	inR, inW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		inR.Close()
		inW.Close()
		return nil, err
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		inR.Close()
		inW.Close()
		outR.Close()
		outW.Close()
		return nil, err
	}
	cmd := exec.Command(c.Path, c.Args...)
	cmd.Dir, cmd.Env = c.Dir, c.Env
	// *os.File ends: Wait closes none of the caller's.
	cmd.Stdin, cmd.Stdout, cmd.Stderr = inR, outW, errW
	cmd.SysProcAttr = childProcAttr()
	err = cmd.Start()
	// The child holds its ends now; ours would keep the pipes open.
	inR.Close()
	outW.Close()
	errW.Close()
	if err != nil {
		inW.Close()
		outR.Close()
		errR.Close()
		return nil, backend.Permanent(fmt.Errorf("start %s: %w", c.Path, err))
	}
	p := &Process{Stdin: inW, Stdout: outR, name: c.Path, pgid: cmd.Process.Pid, done: make(chan struct{})}
	p.stderr.Go(func() {
		defer errR.Close()
		sc := bufio.NewScanner(errR)
		sc.Buffer(make([]byte, 64<<10), 4<<20)
		for sc.Scan() {
			p.tail.add(sc.Text())
			if c.Stderr != nil {
				c.Stderr(sc.Text())
			}
		}
	})
	go func() {
		err := cmd.Wait()
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			err = &ExitError{Name: c.Path, Code: ee.ExitCode(), Stderr: p.tail.String()}
		}
		p.waitErr = err
		close(p.done)
	}()
	return p, nil
}

// Done is closed once the CLI has exited.
func (p *Process) Done() <-chan struct{} { return p.done }

// Err is how the CLI exited (an *ExitError with the end of its stderr, or
// nil for status 0); valid once Done is closed.
func (p *Process) Err() error {
	<-p.done
	return p.waitErr
}

// StderrTail is the last lines of stderr so far, for error messages.
func (p *Process) StderrTail() string { return p.tail.String() }

// Stop ends the CLI: its stdin is closed (an agent may take that as its
// cue to exit), it gets grace to exit, then its group gets SIGTERM and,
// after killGrace, SIGKILL; what it left behind is killed too. Stop
// returns once the CLI has exited and its stderr is read.
func (p *Process) Stop(grace time.Duration) {
	p.Stdin.Close()
	select {
	case <-p.done:
	case <-time.After(grace):
		killGroup(p.pgid)
	}
	<-p.done
	_ = syscall.Kill(-p.pgid, syscall.SIGKILL)
	p.stderr.Wait()
	p.Stdout.Close()
}

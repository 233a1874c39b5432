// Package sdktest holds the few test helpers the SDK's own tests share.
// The SDK is a module of its own and cannot import the daemon's
// internal/testkit; these are copies of the two helpers it used from
// there, kept as small as that.
package sdktest

import (
	"bytes"
	"net"
	"sync"
	"testing"
)

// FreeAddr returns a loopback address with a port that was free a moment
// ago, for a server the test starts itself.
func FreeAddr(t testing.TB) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	return addr
}

// Buffer is a process's output that the test reads while the process
// still writes it (an exec.Cmd's Stderr, a logger's Output): a
// bytes.Buffer safe for concurrent writes and reads.
type Buffer struct {
	mu  sync.Mutex // guards buf
	buf bytes.Buffer
}

func (b *Buffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// String is what was written so far.
func (b *Buffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

package testkit

import (
	"bytes"
	"sync"
)

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

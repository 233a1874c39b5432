package testkit

import (
	"net"
	"os"
	"testing"
)

// ShortTempDir is a private temp dir, removed when the test ends, whose
// path is short enough for the unix sockets of plugins below it (108
// bytes at most; t.TempDir's paths, named after the test, can be longer).
func ShortTempDir(t testing.TB) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "awt-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

// FreeAddr is a loopback address ("127.0.0.1:port") on a port that was
// free a moment ago and that nothing listens on: for a server that is
// down, or for one the test starts there.
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

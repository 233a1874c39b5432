//go:build linux

package sandboxtest

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/unix"
)

// attacks are what a confined process tries, by name; each returns
// what it reached, or the error that stopped it.
var attacks = map[string]func(port uint16, dir string) (string, error){
	// io_uring opens a socket without socket(2) (IORING_OP_SOCKET), so
	// only a refused ring stops it: Landlock does not filter Multipath
	// TCP or UDP.
	"io_uring":       func(uint16, string) (string, error) { r, err := newRing(); r.close(); return "a ring", err },
	"io_uring-mptcp": func(port uint16, _ string) (string, error) { return ringDial(unix.SOCK_STREAM, ipprotoMPTCP, port) },
	"io_uring-udp":   func(port uint16, _ string) (string, error) { return ringDial(unix.SOCK_DGRAM, 0, port) },
	"io_uring-tcp":   func(port uint16, _ string) (string, error) { return ringDial(unix.SOCK_STREAM, 0, port) },
	"mptcp":          func(port uint16, _ string) (string, error) { return dial(unix.SOCK_STREAM, ipprotoMPTCP, port) },
	"udp":            func(port uint16, _ string) (string, error) { return dial(unix.SOCK_DGRAM, 0, port) },
	"tcp":            func(port uint16, _ string) (string, error) { return dial(unix.SOCK_STREAM, 0, port) },
	"raw":            func(port uint16, _ string) (string, error) { return dial(unix.SOCK_RAW, unix.IPPROTO_UDP, port) },
	// An abstract unix socket outside the layer (ListenAbstract).
	"abstract-unix": func(port uint16, _ string) (string, error) {
		fd, err := unix.Socket(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			return "", fmt.Errorf("socket: %w", err)
		}
		defer unix.Close(fd)
		name := AbstractName(port)
		if err := unix.Connect(fd, &unix.SockaddrUnix{Name: name}); err != nil {
			return "", fmt.Errorf("connect: %w", err)
		}
		return name, nil
	},
	// A block device node for the disk of the root directory.
	"mknod-block": func(_ uint16, dir string) (string, error) {
		var st unix.Stat_t
		if err := unix.Stat("/", &st); err != nil {
			return "", err
		}
		p := filepath.Join(dir, "disk")
		return p, unix.Mknod(p, unix.S_IFBLK|0o600, int(st.Dev))
	},
	"mknod-char": func(_ uint16, dir string) (string, error) {
		p := filepath.Join(dir, "mem")
		return p, unix.Mknod(p, unix.S_IFCHR|0o600, int(unix.Mkdev(1, 1)))
	},
	"mkfifo": func(_ uint16, dir string) (string, error) {
		p := filepath.Join(dir, "fifo")
		return p, unix.Mkfifo(p, 0o600)
	},
	// A pseudo-terminal of its own works (its ioctls are granted), but
	// typing into it (TIOCSTI) is refused.
	"pty":     func(uint16, string) (string, error) { return pty(false) },
	"tiocsti": func(uint16, string) (string, error) { return pty(true) },
}

// Attack tries the attack of that name against port on
// 127.0.0.1 or in dir, and says in one line what happened: "<name>:
// reached <what>" or "<name>: refused: <error>".
func Attack(name string, port uint16, dir string) string {
	a, ok := attacks[name]
	if !ok {
		return fmt.Sprintf("%s: no such attack", name)
	}
	what, err := a(port, dir)
	if err != nil {
		return fmt.Sprintf("%s: refused: %v", name, err)
	}
	return fmt.Sprintf("%s: reached %s", name, what)
}

const ipprotoMPTCP = 262

// loopback is 127.0.0.1:port as the kernel reads it.
func loopback(port uint16) unix.RawSockaddrInet4 {
	sa := unix.RawSockaddrInet4{Family: unix.AF_INET, Addr: [4]byte{127, 0, 0, 1}}
	binary.BigEndian.PutUint16((*[2]byte)(unsafe.Pointer(&sa.Port))[:], port)
	return sa
}

// dial makes a socket with socket(2), connects it to port and reads a
// line (stream) or sends a datagram.
func dial(typ, proto int, port uint16) (string, error) {
	fd, err := unix.Socket(unix.AF_INET, typ|unix.SOCK_CLOEXEC, proto)
	if err != nil {
		return "", fmt.Errorf("socket: %w", err)
	}
	defer unix.Close(fd)
	if err := unix.Connect(fd, &unix.SockaddrInet4{Port: int(port), Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		return "", fmt.Errorf("connect: %w", err)
	}
	if typ == unix.SOCK_STREAM {
		buf := make([]byte, 64)
		n, err := unix.Read(fd, buf)
		if err != nil {
			return "", fmt.Errorf("read: %w", err)
		}
		return fmt.Sprintf("port %d: %q", port, buf[:n]), nil
	}
	if _, err := unix.Write(fd, []byte("SANDBOX-DATAGRAM\n")); err != nil {
		return "", fmt.Errorf("send: %w", err)
	}
	return fmt.Sprintf("port %d: sent a datagram", port), nil
}

// ringDial does what dial does through an io_uring: IORING_OP_SOCKET,
// CONNECT, then RECV or SEND.
func ringDial(typ, proto int, port uint16) (string, error) {
	r, err := newRing()
	if err != nil {
		return "", err
	}
	defer r.close()
	fd, err := r.do(func(s *sqe) {
		s.opcode, s.fd, s.off, s.len = opSocket, unix.AF_INET, uint64(typ|unix.SOCK_CLOEXEC), uint32(proto)
	})
	if err != nil {
		return "", fmt.Errorf("IORING_OP_SOCKET: %w", err)
	}
	defer unix.Close(int(fd))
	sa := loopback(port)
	_, err = r.do(func(s *sqe) {
		s.opcode, s.fd, s.addr, s.off = opConnect, fd, uint64(uintptr(unsafe.Pointer(&sa))), unix.SizeofSockaddrInet4
	})
	runtime.KeepAlive(&sa)
	if err != nil {
		return "", fmt.Errorf("IORING_OP_CONNECT: %w", err)
	}
	buf := make([]byte, 64)
	op, n := uint8(opRecv), uint32(len(buf))
	if typ != unix.SOCK_STREAM {
		op, n = opSend, uint32(copy(buf, "SANDBOX-DATAGRAM\n"))
	}
	got, err := r.do(func(s *sqe) { s.opcode, s.fd, s.addr, s.len = op, fd, uint64(uintptr(unsafe.Pointer(&buf[0]))), n })
	runtime.KeepAlive(buf)
	if err != nil {
		return "", fmt.Errorf("IORING_OP_SEND/RECV: %w", err)
	}
	if op == opSend {
		return fmt.Sprintf("port %d: sent a datagram through io_uring", port), nil
	}
	return fmt.Sprintf("port %d through io_uring: %q", port, buf[:got]), nil
}

// io_uring, as much as ringDial needs (include/uapi/linux/io_uring.h).
const (
	opConnect          = 16
	opSend             = 26
	opRecv             = 27
	opSocket           = 45
	ioringOffSQEs      = 0x10000000
	ioringFeatSingleMM = 1
	ioringEnterGetEv   = 1
)

type ringOffsets struct {
	head, tail, ringMask, ringEntries, flags, dropped, array, resv1 uint32
	userAddr                                                        uint64
}

type ringParams struct {
	sqEntries, cqEntries, flags, sqThreadCPU, sqThreadIdle, features, wqFD uint32
	resv                                                                   [3]uint32
	sqOff, cqOff                                                           ringOffsets // cq_off.dropped is overflow, .array is cqes
}

// sqe is a submission queue entry (64 bytes).
type sqe struct {
	opcode, flags uint8
	ioprio        uint16
	fd            int32
	off, addr     uint64
	len, opFlags  uint32
	userData      uint64
	_             [24]byte
}

type ring struct {
	fd         int
	p          ringParams
	rings      []byte
	sqes       []byte
	closeRings bool
}

func newRing() (*ring, error) {
	r := &ring{fd: -1}
	fd, _, e := unix.Syscall(unix.SYS_IO_URING_SETUP, 4, uintptr(unsafe.Pointer(&r.p)), 0)
	if e != 0 {
		return r, fmt.Errorf("io_uring_setup: %w", e)
	}
	r.fd = int(fd)
	if r.p.features&ioringFeatSingleMM == 0 {
		return r, errors.New("io_uring: the kernel maps its rings apart (no IORING_FEAT_SINGLE_MMAP)")
	}
	size := max(r.p.sqOff.array+r.p.sqEntries*4, r.p.cqOff.array+r.p.cqEntries*16)
	var err error
	if r.rings, err = unix.Mmap(r.fd, 0, int(size), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED|unix.MAP_POPULATE); err != nil {
		return r, fmt.Errorf("mmap the rings: %w", err)
	}
	if r.sqes, err = unix.Mmap(r.fd, ioringOffSQEs, int(r.p.sqEntries)*64, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED|unix.MAP_POPULATE); err != nil {
		return r, fmt.Errorf("mmap the entries: %w", err)
	}
	return r, nil
}

func (r *ring) word(off uint32) *uint32 { return (*uint32)(unsafe.Pointer(&r.rings[off])) }

// do submits one entry that fill writes and waits for its completion:
// its result, or the errno it carries.
func (r *ring) do(fill func(*sqe)) (int32, error) {
	tail := atomic.LoadUint32(r.word(r.p.sqOff.tail))
	i := tail & *r.word(r.p.sqOff.ringMask)
	e := (*sqe)(unsafe.Pointer(&r.sqes[i*64]))
	*e = sqe{}
	fill(e)
	*r.word(r.p.sqOff.array + 4*i) = i
	atomic.StoreUint32(r.word(r.p.sqOff.tail), tail+1)
	if _, _, errno := unix.Syscall6(unix.SYS_IO_URING_ENTER, uintptr(r.fd), 1, 1, ioringEnterGetEv, 0, 0); errno != 0 {
		return 0, fmt.Errorf("io_uring_enter: %w", errno)
	}
	head := atomic.LoadUint32(r.word(r.p.cqOff.head))
	if head == atomic.LoadUint32(r.word(r.p.cqOff.tail)) {
		return 0, errors.New("io_uring: no completion")
	}
	cqe := r.p.cqOff.array + 16*(head&*r.word(r.p.cqOff.ringMask))
	res := int32(*r.word(cqe + 8))
	atomic.StoreUint32(r.word(r.p.cqOff.head), head+1)
	if res < 0 {
		return 0, unix.Errno(-res)
	}
	return res, nil
}

func (r *ring) close() {
	if r == nil {
		return
	}
	if r.sqes != nil {
		unix.Munmap(r.sqes)
	}
	if r.rings != nil {
		unix.Munmap(r.rings)
	}
	if r.fd >= 0 {
		unix.Close(r.fd)
	}
}

// pty opens a pseudo-terminal, reads its settings and, with inject,
// types a character into it.
func pty(inject bool) (string, error) {
	m, err := unix.Open("/dev/ptmx", unix.O_RDWR|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
	if err != nil {
		return "", fmt.Errorf("open /dev/ptmx: %w", err)
	}
	defer unix.Close(m)
	if err := unix.IoctlSetPointerInt(m, unix.TIOCSPTLCK, 0); err != nil {
		return "", fmt.Errorf("unlockpt: %w", err)
	}
	n, err := unix.IoctlGetInt(m, unix.TIOCGPTN)
	if err != nil {
		return "", fmt.Errorf("ptsname: %w", err)
	}
	name := fmt.Sprintf("/dev/pts/%d", n)
	s, err := unix.Open(name, unix.O_RDWR|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
	if err != nil {
		return "", fmt.Errorf("open %s: %w", name, err)
	}
	defer unix.Close(s)
	if _, err := unix.IoctlGetTermios(s, unix.TCGETS); err != nil {
		return "", fmt.Errorf("tcgetattr %s: %w", name, err)
	}
	if !inject {
		return name + ", a terminal", nil
	}
	c := byte('x')
	if _, _, e := unix.Syscall(unix.SYS_IOCTL, uintptr(s), unix.TIOCSTI, uintptr(unsafe.Pointer(&c))); e != 0 {
		return "", fmt.Errorf("TIOCSTI: %w", e)
	}
	return name + ": typed into it", nil
}

// AttackEnv names the attack a test binary run as a probe tries
// (MaybeAttack); AttackPortEnv the port.
const (
	AttackEnv     = "AGENT_WORKER_SANDBOX_ATTACK"
	AttackPortEnv = "AGENT_WORKER_SANDBOX_ATTACK_PORT"
)

// MaybeAttack, called first in a test binary's TestMain, makes the
// binary a probe when AttackEnv is set: it tries the attacks it names
// (comma-separated) in the working directory, prints a line for each and
// exits.
func MaybeAttack() {
	names := os.Getenv(AttackEnv)
	if names == "" {
		return
	}
	var port uint16
	fmt.Sscan(os.Getenv(AttackPortEnv), &port)
	dir, _ := os.Getwd()
	for _, name := range strings.Split(names, ",") {
		fmt.Println(Attack(name, port, dir))
	}
	os.Exit(0)
}

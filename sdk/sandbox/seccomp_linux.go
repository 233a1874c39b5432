//go:build linux

package sandbox

import (
	"runtime"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Landlock (ABI 7) filters TCP only, and not Multipath TCP: a socket
// opened with IPPROTO_MPTCP connects wherever it likes (seen on this
// project's 6.18 kernels), UDP is not filtered at all, and a run of a root
// daemon may open raw and packet sockets. Where a layer restricts the
// network, a seccomp filter therefore refuses to open MPTCP, raw and
// packet sockets (EACCES, as Landlock refuses a port) and, for a layer
// that grants no port at all (a tool command's default), any IPv4 or IPv6
// socket, UDP included. It also refuses every system call of another ABI
// than the process's own (i386, x32), whose arguments it could not read.
// Filters are inherited by children and across exec, like the layer.

// ipprotoMPTCP is IPPROTO_MPTCP.
const ipprotoMPTCP = 262

// auditArch is the AUDIT_ARCH_* of the native system call ABI; 0 where
// this file does not know it (the filter is then not installed).
func auditArch() uint32 {
	switch runtime.GOARCH {
	case "amd64":
		return 0xC000003E // AUDIT_ARCH_X86_64
	case "arm64":
		return 0xC00000B7 // AUDIT_ARCH_AARCH64
	}
	return 0
}

// seccomp_data offsets: the low halves of the arguments on a
// little-endian machine.
const (
	offNr     = 0
	offArch   = 4
	offDomain = 16
	offType   = 16 + 8
	offProto  = 16 + 2*8
)

// Socket constants the filter compares.
const (
	afInet   = 2
	afInet6  = 10
	afPacket = 17
	sockRaw  = 3
	sockMask = 0xf // SOCK_NONBLOCK and SOCK_CLOEXEC share socket()'s type
)

// insn is one instruction of a filter being assembled; jt and jf name a
// label ("" for the next instruction).
type insn struct {
	code   uint16
	k      uint32
	jt, jf string
	label  string
}

// netFilter is the program: the native ABI only, and socket() refused
// for MPTCP, raw and packet sockets, and with noInet for IPv4 and IPv6.
func netFilter(arch uint32, noInet bool) []unix.SockFilter {
	const ld, jeq, jge, ret, and = unix.BPF_LD | unix.BPF_W | unix.BPF_ABS, unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K,
		unix.BPF_JMP | unix.BPF_JGE | unix.BPF_K, unix.BPF_RET | unix.BPF_K, unix.BPF_ALU | unix.BPF_AND | unix.BPF_K
	prog := []insn{
		{code: ld, k: offArch},
		{code: jeq, k: arch, jf: "deny"},
		{code: ld, k: offNr},
		{code: jge, k: 0x40000000, jt: "deny"}, // __X32_SYSCALL_BIT
		{code: jeq, k: uint32(unix.SYS_SOCKET), jf: "allow"},
		{code: ld, k: offDomain},
		{code: jeq, k: afPacket, jt: "deny"},
	}
	if noInet {
		prog = append(prog, insn{code: jeq, k: afInet, jt: "deny"}, insn{code: jeq, k: afInet6, jt: "deny"})
	}
	prog = append(prog,
		insn{code: ld, k: offType},
		insn{code: and, k: sockMask},
		insn{code: jeq, k: sockRaw, jt: "deny"},
		insn{code: ld, k: offProto},
		insn{code: jeq, k: ipprotoMPTCP, jt: "deny"},
		insn{code: ret, k: unix.SECCOMP_RET_ALLOW, label: "allow"},
		insn{code: ret, k: unix.SECCOMP_RET_ERRNO | uint32(syscall.EACCES), label: "deny"},
	)
	at := map[string]int{}
	for i, in := range prog {
		if in.label != "" {
			at[in.label] = i
		}
	}
	jump := func(from int, label string) uint8 {
		if label == "" {
			return 0
		}
		return uint8(at[label] - from - 1)
	}
	out := make([]unix.SockFilter, len(prog))
	for i, in := range prog {
		out[i] = unix.SockFilter{Code: in.code, K: in.k, Jt: jump(i, in.jt), Jf: jump(i, in.jf)}
	}
	return out
}

// filterNet installs the filter for a layer of network n on the calling
// thread, or on every thread of the process with allThreads.
// no_new_privs must be set already.
func filterNet(n Net, allThreads bool) error {
	arch := auditArch()
	if arch == 0 || n.All {
		return nil
	}
	prog := netFilter(arch, len(n.Ports) == 0)
	fprog := unix.SockFprog{Len: uint16(len(prog)), Filter: &prog[0]}
	var flags uintptr
	if allThreads {
		flags = unix.SECCOMP_FILTER_FLAG_TSYNC
	}
	_, _, e := unix.RawSyscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER, flags, uintptr(unsafe.Pointer(&fprog)))
	runtime.KeepAlive(prog)
	if e != 0 {
		return e
	}
	return nil
}

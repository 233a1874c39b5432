//go:build linux

package sandbox

import (
	"fmt"
	"runtime"
	"unsafe"

	seccomp "github.com/elastic/go-seccomp-bpf"
	"github.com/elastic/go-seccomp-bpf/arch"
	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"
)

// Every confined layer (a run's plugin process, a warm spare's base
// layer, the narrower layer of a tool command) installs a seccomp filter
// beside its Landlock rules, because Landlock (ABI 7) leaves ways around
// them. Filters are inherited by children and across exec, like the
// layer, and stack: a narrower layer adds its own.
//
// What the filter refuses, and why (EPERM unless said):
//
//   - System calls of another ABI than the process's own (i386, x32),
//     whose arguments it could not read: i386's socketcall(2) would open
//     any socket.
//   - io_uring_setup, io_uring_enter, io_uring_register: IORING_OP_SOCKET
//     opens a socket without socket(2), so an MPTCP or UDP socket made
//     through a ring reached any local port, and so did a plain TCP
//     connect made through one, past Landlock's port rule (both seen on
//     this project's 6.18 kernels). Docker's default profile refuses io_uring for the same
//     reason, so git, go, node (libuv falls back to threads), python and
//     the claude and codex CLIs are known to work without it.
//   - socket(2) of any family but unix, netlink, IPv4 and IPv6: packet
//     sockets see and forge the host's traffic, and vsock, SMC, Bluetooth
//     and the rest are no coding agent's business. Netlink only as
//     NETLINK_ROUTE (what resolvers, Go's net and ip(8) read) and
//     NETLINK_SOCK_DIAG (ss(8)); a root run must not reach netfilter or
//     the audit log. IPv4 and IPv6 only as stream or datagram sockets: raw
//     sockets are refused in every layer. EACCES, as Landlock refuses a
//     port, so Explain names it.
//   - Where a layer restricts the network, any protocol but TCP, UDP and
//     ICMP (ping): Landlock filters TCP only, and not Multipath TCP, SMC
//     (IPPROTO_SMC) or SCTP, which connect wherever they like. Where a
//     layer grants no port at all (a tool command's default), every IPv4
//     and IPv6 socket, since UDP is not filtered at all. EACCES.
//   - mknod and mknodat of a character or block device (FIFOs and
//     sockets may still be made): a run of a root daemon made a node for
//     the root disk in its worktree. Landlock grants no make-device right
//     either (landlock_linux.go).
//   - ioctl TIOCSTI and TIOCLINUX: they type into a terminal, and a run
//     may open /dev/tty, the daemon's own terminal where it was started
//     from one.
//   - bpf, perf_event_open, userfaultfd: kernel and other processes'
//     memory for a root run, a kernel exploit's tool for any.
//   - keyctl, add_key, request_key: the kernel's keyrings are not
//     namespaced; the daemon user's keys (Kerberos, fscrypt) live there.
//   - setns: joining another process's namespaces.
//   - open_by_handle_at: a root run opening a file by its handle, not
//     its path.
//   - init_module, finit_module, delete_module, kexec_load,
//     kexec_file_load, reboot, swapon, swapoff, acct, iopl, ioperm,
//     settimeofday, clock_settime: what a root run could do to the
//     machine itself.
//
// Checked and left to others, or out of scope:
//
//   - ptrace and process_vm_readv/writev of a process outside the run:
//     Landlock refuses them (a domain may only trace its own or nested
//     domains); a debugger inside the run works.
//   - Abstract unix sockets: Landlock's scope (ABI 6), which StartConfined
//     and RunTool request, keeps them inside the layer. Signals likewise.
//   - Pathname unix sockets (docker.sock, the D-Bus system bus, systemd's
//     private socket for a root run): Landlock before its "resolve unix"
//     right cannot refuse connect(2) to them, and a filter cannot read
//     the path. Run the daemon as an ordinary user, whom those sockets
//     refuse.
//   - sendmsg on inherited descriptors and SCM_RIGHTS: a confined process
//     inherits only its stdio and the plugin's own connection to the
//     daemon (Go opens everything close-on-exec), and the daemon passes
//     no descriptors.
//   - unshare and clone of new namespaces: Landlock and this filter
//     follow the process into them, a new network namespace reaches only
//     its own loopback, and Landlock refuses mount(2), pivot_root and
//     move_mount. Refusing them would break tools' own sandboxes.
//   - personality: it changes only the caller.
//   - Another architecture than amd64 and arm64 (no filter; socketcall
//     would need one per ABI).
//
// The program comes from github.com/elastic/go-seccomp-bpf: its arch
// tables give every system call's number by name on both x86-64 and
// aarch64, so the filter of either can be built and tested anywhere, and
// its Program resolves labels (long jumps included) into golang.org/x/net
// /bpf instructions. Its Policy is not used: it assembles for the running
// GOARCH only, hands a call of another ABI to the default action (allow,
// here), and compares arguments as 64 bits, so a refusal of socket(2)'s
// int family would be passed by setting the upper half, which the kernel
// ignores. The filter compares the low 32 bits only, as the kernel reads
// them.

// Errors the filter returns.
const (
	filterDeny     = uint32(unix.SECCOMP_RET_ERRNO) | uint32(unix.EPERM)
	filterDenySock = uint32(unix.SECCOMP_RET_ERRNO) | uint32(unix.EACCES)
)

// filterRefused are the system calls no confined process may make; a
// name an ABI lacks (mknod, iopl on arm64) is skipped there.
var filterRefused = []string{
	"io_uring_setup", "io_uring_enter", "io_uring_register",
	"bpf", "perf_event_open", "userfaultfd",
	"keyctl", "add_key", "request_key",
	"setns", "open_by_handle_at",
	"init_module", "finit_module", "delete_module", "kexec_load", "kexec_file_load",
	"reboot", "swapon", "swapoff", "acct", "iopl", "ioperm", "settimeofday", "clock_settime",
}

// Arguments the filter compares (the same on x86-64 and aarch64).
const (
	ipprotoICMP      = 1
	ipprotoTCP       = 6
	ipprotoUDP       = 17
	ipprotoICMPV6    = 58
	ipprotoMPTCP     = 262
	netlinkRoute     = 0
	netlinkSockDiag  = 4
	sockTypeOther    = 0xc     // type bits of every type but stream (1), dgram (2) and raw (3)
	sIFCHR           = 0o20000 // set in S_IFCHR and S_IFBLK, not in S_IFIFO, S_IFSOCK, S_IFREG
	ioctlTIOCSTI     = 0x5412
	ioctlTIOCLINUX   = 0x541c
	x32SyscallBit    = 0x40000000
	seccompArchOff   = 4
	seccompNumberOff = 0
)

// filterArch is the running ABI's table; nil where this file does not
// filter.
func filterArch() *arch.Info {
	switch runtime.GOARCH {
	case "amd64":
		return arch.X86_64
	case "arm64":
		return arch.AARCH64
	}
	return nil
}

// buildFilter assembles the filter of a layer of network n for ABI a.
func buildFilter(a *arch.Info, n Net) ([]bpf.Instruction, error) {
	nr := func(name string) (uint32, bool) {
		num, ok := a.SyscallNames[name]
		return uint32(num), ok
	}
	p := seccomp.NewProgram()
	allow, deny, denySock := p.NewLabel(), p.NewLabel(), p.NewLabel()
	sock, mknod, mknodat, ioctl := p.NewLabel(), p.NewLabel(), p.NewLabel(), p.NewLabel()

	// The accumulator holds the system call's number: dispatch on it.
	for _, name := range filterRefused {
		if num, ok := nr(name); ok {
			p.JmpIfTrue(bpf.JumpEqual, num, deny)
		}
	}
	for _, c := range []struct {
		name string
		to   seccomp.Label
	}{{"socket", sock}, {"mknodat", mknodat}, {"mknod", mknod}} {
		if num, ok := nr(c.name); ok {
			p.JmpIfTrue(bpf.JumpEqual, num, c.to)
		} else if c.name != "mknod" { // aarch64 has mknodat only
			return nil, fmt.Errorf("seccomp: %s has no %s", a.Name, c.name)
		}
	}
	num, ok := nr("ioctl")
	if !ok {
		return nil, fmt.Errorf("seccomp: %s has no ioctl", a.Name)
	}
	p.JmpIf(bpf.JumpEqual, num, ioctl, allow)

	// socket(domain, type, protocol).
	netlink, inet, odd, even, typeOK := p.NewLabel(), p.NewLabel(), p.NewLabel(), p.NewLabel(), p.NewLabel()
	p.SetLabel(sock)
	p.LdLo(0)
	p.JmpIfTrue(bpf.JumpEqual, unix.AF_UNIX, allow)
	p.JmpIfTrue(bpf.JumpEqual, unix.AF_NETLINK, netlink)
	if !n.All && len(n.Ports) == 0 {
		p.Ret(seccomp.Action(filterDenySock)) // no IPv4 or IPv6 at all
	} else {
		p.JmpIfTrue(bpf.JumpEqual, unix.AF_INET, inet)
		p.JmpIf(bpf.JumpEqual, unix.AF_INET6, inet, denySock)
		p.SetLabel(inet)
		p.LdLo(1) // SOCK_NONBLOCK and SOCK_CLOEXEC share the type: test its low bits
		p.JmpIfTrue(bpf.JumpBitsSet, sockTypeOther, denySock)
		p.JmpIf(bpf.JumpBitsSet, 1, odd, even)
		p.SetLabel(odd)
		p.JmpIf(bpf.JumpBitsSet, 2, denySock, typeOK) // 3: raw
		p.SetLabel(even)
		p.JmpIf(bpf.JumpBitsSet, 2, typeOK, denySock) // 0: no type
		p.SetLabel(typeOK)
		if n.All {
			p.Ret(seccomp.ActionAllow)
		} else {
			p.LdLo(2)
			for _, proto := range []uint32{0, ipprotoTCP, ipprotoUDP, ipprotoICMP} {
				p.JmpIfTrue(bpf.JumpEqual, proto, allow)
			}
			p.JmpIf(bpf.JumpEqual, ipprotoICMPV6, allow, denySock)
		}
	}
	p.SetLabel(netlink)
	p.LdLo(2)
	p.JmpIfTrue(bpf.JumpEqual, netlinkRoute, allow)
	p.JmpIf(bpf.JumpEqual, netlinkSockDiag, allow, denySock)

	// mknod(path, mode, dev) and mknodat(dirfd, path, mode, dev).
	p.SetLabel(mknod)
	p.LdLo(1)
	p.JmpIf(bpf.JumpBitsSet, sIFCHR, deny, allow)
	p.SetLabel(mknodat)
	p.LdLo(2)
	p.JmpIf(bpf.JumpBitsSet, sIFCHR, deny, allow)

	// ioctl(fd, request, ...).
	p.SetLabel(ioctl)
	p.LdLo(1)
	p.JmpIfTrue(bpf.JumpEqual, ioctlTIOCSTI, deny)
	p.JmpIf(bpf.JumpEqual, ioctlTIOCLINUX, deny, allow)

	// The answers, last: the Program jumps forward only.
	p.SetLabel(allow)
	p.Ret(seccomp.ActionAllow)
	p.SetLabel(deny)
	p.Ret(seccomp.Action(filterDeny))
	p.SetLabel(denySock)
	p.Ret(seccomp.Action(filterDenySock))

	body, err := p.Assemble()
	if err != nil {
		return nil, fmt.Errorf("seccomp: %w", err)
	}
	// The head, which the Program cannot express (it loads arguments
	// only): the native ABI or nothing, and the number into A.
	head := []bpf.Instruction{
		bpf.LoadAbsolute{Off: seccompArchOff, Size: 4},
		bpf.JumpIf{Cond: bpf.JumpEqual, Val: uint32(a.ID), SkipTrue: 1},
		bpf.RetConstant{Val: filterDeny},
		bpf.LoadAbsolute{Off: seccompNumberOff, Size: 4},
	}
	if a.ID == arch.X86_64.ID {
		head = append(head,
			bpf.JumpIf{Cond: bpf.JumpGreaterOrEqual, Val: x32SyscallBit, SkipFalse: 1},
			bpf.RetConstant{Val: filterDeny})
	}
	return append(head, body...), nil
}

// filter installs the filter for a layer of network n on the calling
// thread, or on every thread of the process with allThreads.
// no_new_privs must be set already.
func filter(n Net, allThreads bool) error {
	a := filterArch()
	if a == nil {
		return nil
	}
	insns, err := buildFilter(a, n)
	if err != nil {
		return err
	}
	raw, err := bpf.Assemble(insns)
	if err != nil {
		return fmt.Errorf("seccomp: %w", err)
	}
	prog := make([]unix.SockFilter, len(raw))
	for i, in := range raw {
		prog[i] = unix.SockFilter{Code: in.Op, Jt: in.Jt, Jf: in.Jf, K: in.K}
	}
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

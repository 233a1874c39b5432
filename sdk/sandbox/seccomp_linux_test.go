//go:build linux

package sandbox

import (
	"encoding/binary"
	"testing"

	"github.com/elastic/go-seccomp-bpf/arch"
	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"
)

// call is one system call as the filter sees it (seccomp_data).
type call struct {
	name string
	args [6]uint64
	arch *arch.Info // nil: the ABI the filter is built for
	x32  bool       // the x32 ABI's bit in the number
}

// run runs prog, built for a, on c in golang.org/x/net/bpf's VM. The VM
// loads words in network order where the kernel loads them in the
// machine's: each word is written so that both read the same value.
func run(t *testing.T, prog []bpf.Instruction, a *arch.Info, c call) uint32 {
	t.Helper()
	ca := a
	if c.arch != nil {
		ca = c.arch
	}
	num, ok := ca.SyscallNames[c.name]
	if !ok {
		t.Fatalf("%s has no system call %s", ca.Name, c.name)
	}
	if c.x32 {
		num |= x32SyscallBit
	}
	data := make([]byte, 64)
	binary.BigEndian.PutUint32(data[0:], uint32(num))
	binary.BigEndian.PutUint32(data[4:], uint32(ca.ID))
	for i, v := range c.args { // little-endian seccomp_data: the low half first
		binary.BigEndian.PutUint32(data[16+8*i:], uint32(v))
		binary.BigEndian.PutUint32(data[16+8*i+4:], uint32(v>>32))
	}
	vm, err := bpf.NewVM(prog)
	if err != nil {
		t.Fatalf("the filter does not load: %v", err)
	}
	ret, err := vm.Run(data)
	if err != nil {
		t.Fatalf("the filter does not run: %v", err)
	}
	return uint32(ret)
}

// The filter, run on system calls of both ABIs it is built for: what it
// refuses (io_uring, device nodes, sockets around Landlock's TCP rules,
// another ABI) and what every program needs, allowed.
func TestFilter(t *testing.T) {
	t.Parallel()
	const (
		allow = unix.SECCOMP_RET_ALLOW
		eperm = filterDeny
		eacc  = filterDenySock
	)
	const fdcwd = ^uint64(99) // AT_FDCWD, sign-extended as libc passes it
	none, ports, all := Net{}, Net{Ports: []uint16{443}}, Net{All: true}
	sock := func(domain, typ, proto uint64) call { return call{name: "socket", args: [6]uint64{domain, typ, proto}} }
	mknodat := func(mode uint64) call { return call{name: "mknodat", args: [6]uint64{fdcwd, 0x1000, mode, 0x801}} }
	for _, a := range []*arch.Info{arch.X86_64, arch.AARCH64} {
		other := arch.I386
		if a == arch.AARCH64 {
			other = arch.ARM
		}
		tests := map[string]struct {
			net  Net
			call call
			want uint32
		}{
			"read":                       {none, call{name: "read"}, allow},
			"openat":                     {none, call{name: "openat", args: [6]uint64{fdcwd, 0x1000, unix.O_RDWR | unix.O_CREAT}}, allow},
			"clone":                      {none, call{name: "clone"}, allow},
			"execve":                     {none, call{name: "execve"}, allow},
			"ioctl TCGETS":               {none, call{name: "ioctl", args: [6]uint64{0, unix.TCGETS}}, allow},
			"ioctl TIOCSTI":              {all, call{name: "ioctl", args: [6]uint64{0, unix.TIOCSTI}}, eperm},
			"ioctl TIOCLINUX":            {all, call{name: "ioctl", args: [6]uint64{0, ioctlTIOCLINUX}}, eperm},
			"io_uring_setup":             {all, call{name: "io_uring_setup", args: [6]uint64{8}}, eperm},
			"io_uring_enter":             {all, call{name: "io_uring_enter"}, eperm},
			"io_uring_register":          {ports, call{name: "io_uring_register"}, eperm},
			"bpf":                        {all, call{name: "bpf"}, eperm},
			"userfaultfd":                {none, call{name: "userfaultfd"}, eperm},
			"perf_event_open":            {none, call{name: "perf_event_open"}, eperm},
			"keyctl":                     {none, call{name: "keyctl"}, eperm},
			"setns":                      {none, call{name: "setns"}, eperm},
			"finit_module":               {all, call{name: "finit_module"}, eperm},
			"open_by_handle_at":          {all, call{name: "open_by_handle_at"}, eperm},
			"unshare":                    {none, call{name: "unshare", args: [6]uint64{unix.CLONE_NEWUSER | unix.CLONE_NEWNET}}, allow},
			"mknodat a block device":     {all, mknodat(unix.S_IFBLK | 0o600), eperm},
			"mknodat a char device":      {all, mknodat(unix.S_IFCHR | 0o666), eperm},
			"mknodat a FIFO":             {none, mknodat(unix.S_IFIFO | 0o600), allow},
			"mknodat a socket":           {none, mknodat(unix.S_IFSOCK | 0o600), allow},
			"mknodat a regular file":     {none, mknodat(unix.S_IFREG | 0o600), allow},
			"mknodat a device, high set": {none, mknodat(1<<32 | unix.S_IFBLK | 0o600), eperm},
			"socket unix":                {none, sock(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0), allow},
			"socket netlink route":       {none, sock(unix.AF_NETLINK, unix.SOCK_RAW|unix.SOCK_CLOEXEC, unix.NETLINK_ROUTE), allow},
			"socket netlink sock_diag":   {none, sock(unix.AF_NETLINK, unix.SOCK_DGRAM, unix.NETLINK_SOCK_DIAG), allow},
			"socket netlink netfilter":   {all, sock(unix.AF_NETLINK, unix.SOCK_RAW, unix.NETLINK_NETFILTER), eacc},
			"socket packet":              {all, sock(unix.AF_PACKET, unix.SOCK_RAW, 0x300), eacc},
			"socket packet, high set":    {all, sock(1<<32|unix.AF_PACKET, unix.SOCK_RAW, 0x300), eacc},
			"socket vsock":               {all, sock(unix.AF_VSOCK, unix.SOCK_STREAM, 0), eacc},
			"socket smc":                 {ports, sock(unix.AF_SMC, unix.SOCK_STREAM, 0), eacc},
			"socket raw":                 {all, sock(unix.AF_INET, unix.SOCK_RAW, unix.IPPROTO_TCP), eacc},
			"socket raw v6":              {ports, sock(unix.AF_INET6, unix.SOCK_RAW|unix.SOCK_NONBLOCK, unix.IPPROTO_ICMPV6), eacc},
			"socket seqpacket (sctp)":    {ports, sock(unix.AF_INET, unix.SOCK_SEQPACKET, 0), eacc},
			"socket tcp":                 {ports, sock(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC|unix.SOCK_NONBLOCK, 0), allow},
			"socket tcp v6":              {ports, sock(unix.AF_INET6, unix.SOCK_STREAM, unix.IPPROTO_TCP), allow},
			"socket udp":                 {ports, sock(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0), allow},
			"socket ping":                {ports, sock(unix.AF_INET, unix.SOCK_DGRAM, unix.IPPROTO_ICMP), allow},
			"socket mptcp":               {ports, sock(unix.AF_INET, unix.SOCK_STREAM, ipprotoMPTCP), eacc},
			"socket mptcp v6":            {ports, sock(unix.AF_INET6, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, ipprotoMPTCP), eacc},
			"socket smc over inet":       {ports, sock(unix.AF_INET, unix.SOCK_STREAM, 256), eacc}, // IPPROTO_SMC
			"socket tcp, no port":        {none, sock(unix.AF_INET, unix.SOCK_STREAM, 0), eacc},
			"socket udp, no port":        {none, sock(unix.AF_INET6, unix.SOCK_DGRAM, 0), eacc},
			"socket mptcp, all network":  {all, sock(unix.AF_INET, unix.SOCK_STREAM, ipprotoMPTCP), allow},
			"socket udp, all network":    {all, sock(unix.AF_INET, unix.SOCK_DGRAM, 0), allow},
			"another ABI":                {all, call{name: "read", arch: other}, eperm},
			"another ABI's socket":       {all, call{name: "socket", arch: other, args: [6]uint64{unix.AF_INET, unix.SOCK_STREAM, ipprotoMPTCP}}, eperm},
		}
		if a == arch.X86_64 {
			tests["mknod a block device"] = struct {
				net  Net
				call call
				want uint32
			}{all, call{name: "mknod", args: [6]uint64{0x1000, unix.S_IFBLK | 0o600, 0x801}}, eperm}
			tests["mknod a FIFO"] = struct {
				net  Net
				call call
				want uint32
			}{none, call{name: "mknod", args: [6]uint64{0x1000, unix.S_IFIFO | 0o600}}, allow}
			tests["i386's socketcall"] = struct {
				net  Net
				call call
				want uint32
			}{all, call{name: "socketcall", arch: arch.I386, args: [6]uint64{1}}, eperm}
			tests["the x32 ABI"] = struct {
				net  Net
				call call
				want uint32
			}{all, call{name: "read", arch: arch.X32, x32: true}, eperm}
		}
		progs := map[string][]bpf.Instruction{}
		for name, tc := range tests {
			prog, ok := progs[tc.net.String()]
			if !ok {
				var err error
				if prog, err = buildFilter(a, tc.net); err != nil {
					t.Fatalf("%s: %v", a.Name, err)
				}
				progs[tc.net.String()] = prog
			}
			if got := run(t, prog, a, tc.call); got != tc.want {
				t.Errorf("%s, network %s: %s returns %#x, want %#x", a.Name, tc.net, name, got, tc.want)
			}
		}
	}
}

// Every name the filter refuses is a system call of x86-64, so a typo
// cannot leave one out.
func TestFilterNames(t *testing.T) {
	t.Parallel()
	for _, name := range filterRefused {
		if _, ok := arch.X86_64.SyscallNames[name]; !ok {
			t.Errorf("%s is no x86-64 system call", name)
		}
	}
}

// Package sandbox is the run sandbox as both sides of the plugin boundary
// see it: the Policy the daemon decides for a run and sends with it, the
// kernel calls that enforce it (Linux Landlock: files by path, TCP by
// port, signals and abstract sockets kept inside; a seccomp filter
// beside it for what gets around Landlock: io_uring, device nodes,
// sockets it does not see), and Explain, which
// turns a command's "Permission denied" into a transcript line naming the
// path or port the policy left out.
//
// Plugin authors rarely call it: the sdk narrows a plugin process to its
// run's policy before the backend's Run, and RunTool gives a shell tool's
// command the narrower network of tools. The daemon applies the base layer
// itself, before any plugin code runs, with StartConfined.
package sandbox

package plugin

// parentDeathSignal: on Linux the daemon starts each plugin with a
// parent-death signal, and the first-party plugins their children too
// (orphan.go).
const parentDeathSignal = true

// dieWithParent has nothing to do: the kernel sends the parent-death
// signal.
func dieWithParent() {}

// endChildGroups has nothing to do: each child the first-party plugins
// start dies with them by its own parent-death signal.
func endChildGroups() {}

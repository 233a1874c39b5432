//go:build agentworker_testhooks

package main

// testHooks is true in the end-to-end tests' builds: the daemon reads its
// test switches (testhooks.go).
const testHooks = true

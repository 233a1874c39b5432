//go:build !agentworker_testhooks

package main

// testHooks is false in every build but the end-to-end tests' (make
// build, make dist, go install): the daemon ignores its test switches.
const testHooks = false

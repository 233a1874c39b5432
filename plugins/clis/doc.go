// Package clis names the agent CLIs the first-party backends drive: the
// version our end-to-end tests run (the Makefile's CLAUDE_CODE_VERSION and
// CODEX_VERSION, which a test keeps equal) and the one command that
// installs it. The plugins' "missing" status and errors, `plugins` and
// `doctor` all take the hint from here, so a user is told one thing.
package clis

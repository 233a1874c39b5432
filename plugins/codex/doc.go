// Package codex is the Codex CLI backend (backend name "codex"): each run
// starts `codex exec --json` as a child process, with a private CODEX_HOME
// whose config.toml points Codex at the daemon's MCP server, carries the
// agent's system prompt as developer instructions and never asks for
// approval, and turns Codex's JSONL events into run events.
//
// The agent's config (a JSON object) may set:
//
//	cli           path or name of the codex binary (default: codex on PATH)
//	timeout       kill codex after this long without output ("10m" or seconds; default 10m)
//	base_url      an OpenAI Responses API endpoint (default: $OPENAI_BASE_URL, else Codex's own provider)
//	env_key       the variable holding that endpoint's API key (default OPENAI_API_KEY)
//	sandbox_mode  Codex's sandbox_mode: read-only, workspace-write (default) or danger-full-access
//	sandbox       the same, as a string (sandbox_mode wins when both are set); as an
//	              object it is the agent's sandbox policy, which the daemon applies, not Codex
//
// Codex exits 0 even when an MCP call or the whole turn failed, so a run
// is judged by its events, never by the exit code alone: a failed turn, an
// error codex did not recover from, or a failed MCP call that left the
// agent without an answer fails the run. Codex records threads in
// CODEX_HOME/sessions, which is linked to a folder per agent under the
// user's cache directory (agent-worker/codex/threads), so that the next
// run continues the conversation with `codex exec resume` although each
// run's CODEX_HOME is private and removed with it.
package codex

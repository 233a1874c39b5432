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
//
// Gates (issue 43): a daemon run's CODEX_HOME also gets a hooks.json with a
// PreToolUse hook on every tool whose command is this plugin's own binary,
// `agent-worker-backend-codex gate-hook WORKDIR/gate.json` (GateHook). The
// gate file holds the daemon's address and names the variable with the
// run's token ($AGENT_WORKER_MCP_TOKEN, which Codex passes on to its
// hooks). The hook asks the daemon's gate (POST <mcp url>/gate) about the
// call in the daemon's terms: Codex's shell (tool_name Bash) as shell with
// the model's command line, apply_patch once per file the patch writes,
// MCP tools by name, the daemon's own tools not at all (the daemon gates
// them itself). A refusal is Codex's deny answer, exactly its format
// (Codex runs the call when an answer has any other key), which Codex
// gives the model as the tool's output; a daemon that cannot be asked
// denies. Codex 0.169.0 runs hooks only once a person trusted them, so a
// gated run passes --enable hooks --dangerously-bypass-hook-trust: it
// trusts the hooks of the run's private CODEX_HOME, which holds only ours,
// while a project's .codex/hooks.json stays off (a private CODEX_HOME
// trusts no project). Codex's JSON stream does not mention a blocked call
// (testdata/gate_refused.jsonl and .stderr are what 0.169.0 printed), so
// the hook notes each refusal beside the gate file and the plugin sends it
// as the run's gate event, before the next line codex prints.
package codex

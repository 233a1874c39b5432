// Package cursor is the Cursor CLI backend (backend name "cursor"): each
// run is one headless cursor-agent process that talks to the team through
// the daemon's MCP server. The plugin binary is
// cmd/agent-worker-backend-cursor.
//
// A run builds the prompt (sdk/worker) from the context its request
// carries (inbox, recent channel, notes.md, documents; fetched from the
// daemon only when an older daemon sent none), and runs
//
//	cursor-agent -p --output-format stream-json --force --approve-mcps \
//	  --workspace <private dir> [--model m] [--resume chat] [config args...] "<prompt>"
//
// with stdin closed, in its own process group, killed after the config's
// idle timeout without output. Its stdout events become run events (see
// below), its stderr lines become log events. The run fails on a non-zero
// exit, an error result, or no result at all; a missing CLI fails the
// agent at once (permanent) with install instructions.
//
// # Agent config
//
//	cli          path or name of the CLI (default cursor-agent on PATH)
//	timeout      idle timeout, "10m" or seconds (default 10m)
//	args         extra arguments, e.g. ["--trust"] or ["--sandbox", "enabled"]
//	env          extra environment for the CLI
//	mcp_servers  the agent's own servers: {name: {url, headers} | {command, env}}
//
// The model drops its provider prefix and Anthropic names map to Cursor's
// ("anthropic/claude-sonnet-4-5" → "sonnet-4.5"); with no model, --model
// is left out so the user's Cursor default applies (the anchor always
// passed "sonnet-4.5", which breaks when Cursor retires it).
//
// # Where it runs, and why not in the project
//
// cursor-agent reads MCP servers from .cursor/mcp.json in its workspace
// and from ~/.cursor/mcp.json. The anchor wrote the former into the
// user's project (leaking the run token into their tree); this backend
// never writes there. No documented switch points the CLI at another MCP
// file while keeping the project as its workspace: CURSOR_CONFIG_DIR and
// XDG_CONFIG_HOME move cli-config.json only, and a private HOME would hide
// the user's login. So the run's workspace is a private folder holding
// only .cursor/mcp.json (mode 0600), passed both as the working directory
// and as --workspace, and the prompt names the project directory and asks
// for absolute paths there. The price: the project's own .cursor/rules,
// AGENTS.md and .cursor/mcp.json are not loaded (give the agent's servers
// in its config). cursor-agent files chats under a hash of the working
// directory, so the folder has a fixed path per agent (in the agent's
// state directory) for --resume to work, and is removed after each run. If a
// resumed chat is gone, the run starts a new chat instead of failing.
//
// The system prompt has no flag either: it leads the prompt under a
// "## System" heading (the anchor dropped it).
//
// # Stream format relied on
//
// From Cursor's docs, cursor.com/docs/cli/reference/output-format: one
// JSON object per line; {"type":"system","subtype":"init","session_id",
// "model","cwd",…} once; {"type":"user",…} echoing the prompt;
// {"type":"assistant","message":{"content":[{"type":"text","text"}]}},
// one line per whole assistant message (no deltas without
// --stream-partial-output); {"type":"tool_call","subtype":"started"|
// "completed","call_id","tool_call":{"readToolCall"|"writeToolCall"|…:
// {"args","result"}} or {"function":{"name","arguments"}}}; and last
// {"type":"result","subtype":"success","is_error","duration_ms",
// "duration_api_ms","result","session_id","request_id"}. On failure the
// CLI exits non-zero, writes the error to stderr and may print no result.
// Flags from cursor.com/docs/cli/reference/parameters: -p/--print,
// --output-format, -f/--force, --approve-mcps, --workspace, --model,
// --resume [chatId], --api-key / CURSOR_API_KEY; configuration paths from
// cursor.com/docs/cli/reference/configuration; MCP file format
// ({"mcpServers":{name:{"url","headers"}|{"command","args","env"}}}, project
// .cursor/mcp.json over ~/.cursor/mcp.json) from cursor.com/docs/mcp and
// cursor.com/docs/cli/using ("MCP": the CLI reads the editor's mcp.json).
//
// Not in the docs, from observed streams (github.com/reifying/cursor-hack
// docs/stream-json-events.md and other integrations): the MCP tool call
// shape {"mcpToolCall":{"args":{"name","toolName","providerIdentifier",
// "args"},"result":{"success":{"content":[{"text":{"text"}}],"isError"}}}},
// "thinking" events (ignored), --workspace choosing which .cursor/mcp.json
// loads (openabdev/openab docs/cursor.md), chats stored under ~/.cursor/chats/
// <md5(cwd)>/ (entireio/cli#1063), and that an untrusted workspace makes
// `cursor-agent -p` print a refusal and exit 0 unless --trust or -f is
// given (escoffier-labs/brigade#205), hence "no result" is an error. A
// usage object on the result is read if present (input_tokens or
// inputTokens); the documented format has none.
//
// Events: init → EventSession; assistant text → EventText (messages
// separated by a blank line); tool_call started/completed →
// EventToolCall/EventToolResult (MCP tools of the daemon by tool name,
// others as server.tool; results clipped to 4000 characters); result →
// EventUsage (if any) and EventResult; non-JSON stdout and stderr →
// EventLog.
//
// The CLI cannot be installed in this project's environment (it is not
// on npm): the tests run a scripted stand-in, testdata/cursor-agent, that
// checks the command line, reads the MCP config it was pointed at, calls
// the daemon's channel_send over MCP with the bearer header and prints
// the stream above.
package cursor

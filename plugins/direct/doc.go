// Package direct is the direct-API backend (backend name "sdk", which the
// daemon also calls "default"): it talks to a model's HTTP API with the
// official Go SDKs and runs the tool loop itself, so an agent needs no CLI,
// only an API key. The plugin binary is cmd/agent-worker-backend-sdk.
//
// A run connects to the daemon as its agent, builds the prompt with
// sdk/worker (the agent's system prompt goes as the system prompt), offers
// the model the daemon's tools and those of the agent's own MCP servers
// (named <server>__<tool>), and loops model → tool calls → results → model
// until the model stops calling tools or max_steps turns have passed. Text
// streams as it arrives; every turn reports the run's tokens and cost.
//
// Models:
//
//	anthropic/<model>   Anthropic Messages API; ANTHROPIC_API_KEY, ANTHROPIC_BASE_URL
//	openai/<model>      OpenAI Chat Completions; OPENAI_API_KEY, OPENAI_BASE_URL
//	<name>/<model>      a known OpenAI-compatible service: deepseek, google,
//	                    groq, mistral, ollama, openrouter, xai
//	                    (<NAME>_API_KEY, <NAME>_BASE_URL)
//
// A bare claude-… or gpt-…/o… name picks Anthropic or OpenAI. Any other
// OpenAI-compatible endpoint (vLLM, LM Studio, a proxy) is an agent's
// provider, with the bare model name (or <name>/<model>):
//
//	provider: {name: local, base_url: http://localhost:8000/v1, api_key_env: LOCAL_KEY}
//
// A provider named anthropic speaks the Anthropic API instead. A provider
// without api_key_env sends no key. A missing key fails the run at once,
// permanently, naming the variable to set.
//
// Config keys (beside those of workflow/config.go):
//
//	max_steps: 50      model turns per run; then a warning and a normal end
//	max_tokens: 4096   output tokens per turn (Anthropic: 8192 if unset;
//	                   OpenAI-compatible APIs: their own default)
//	timeout: 10m       bounds the whole run
//	prices: {"<model>": {input: 3, output: 15}}   USD per million tokens,
//	                   over the built-in table; an unknown model costs 0
//	env: {KEY: value}  read before the process environment (keys, base URLs)
//	tools: [read, write, list, search, shell]   workspace tool sets in the
//	                   run's project directory (all if absent, [] for none)
//	memory_tokens: 20000   conversation memory kept between runs, in
//	                   estimated tokens (chars/4); 0 keeps none
//
// Workspace tools (workspace.go) read, write, edit, list and search files
// and run /bin/sh commands, every path confined to the project directory
// with symlinks resolved; output is cut at 30,000 bytes with a note of its
// size, and a shell command is killed with its process group after its
// timeout. Under a run's sandbox the file tools have what the plugin
// process has, and a shell command less network (the policy's tool
// network: none unless the agent's sandbox grants ports); what the sandbox
// refused a tool (a path, a port) is a line after its result, which the
// model reads, and a sandbox event in the transcript. Memory (memory.go)
// is the run's session event: the daemon keeps it and hands it back as
// ResumeSession, and the next run replays it as earlier turns of the
// conversation. Runs that no longer fit are dropped, oldest first, after
// one request to the agent's model (summary.go) folds them into a short
// summary that opens the history; a failed summary only drops them.
//
// Requests that fail with 408, 409, 429 or 5xx are retried up to three
// times, waiting as retry-after says.
package direct

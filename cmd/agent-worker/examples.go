package main

// examples are the EXAMPLES of each command's help and of docs/cli.md, by
// the command's path ("" is the root, "tasks show" a subcommand). Each is
// one invocation as a user types it (without the "$ "); a line beginning
// with # is a comment on the lines that follow. They come from the
// guides' tested sessions (README.md, docs/getting-started.md,
// docs/workflows.md, docs/operations.md) where those show the command.
// TestEveryCommandHasAnExample fails for a command without one, and
// TestExamplesParse for an example whose command or flags do not exist.
var examples = map[string][]string{
	"": {
		"agent-worker new alice --backend mock",
		"agent-worker send @global 'hi @alice, what should we build first?'",
		"agent-worker run examples/code-review/review.yaml",
	},

	"daemon": {
		"agent-worker daemon",
		"# traces to a local Jaeger (OTLP over HTTP); the console links each run to its trace\nagent-worker daemon --otlp-endpoint http://localhost:4318 --trace-url 'http://localhost:16686/trace/{trace_id}'",
		"agent-worker daemon --config daemon.yaml",
	},
	"status":  {"agent-worker status", "agent-worker status --json"},
	"doctor":  {"agent-worker doctor", "agent-worker doctor --json"},
	"console": {"agent-worker console", "agent-worker console --no-open"},
	"plugins": {"agent-worker plugins", "agent-worker plugins --json"},
	"backends": {
		"agent-worker backends",
	},
	"backup": {
		"agent-worker backup ~/aw-backup.db",
		"agent-worker backup ~/aw-backup.db --force",
	},

	"new": {
		"agent-worker new alice --backend mock",
		"agent-worker new dave --backend claude --model sonnet",
		"agent-worker new rita --backend claude --role reviewer",
	},
	"list": {"agent-worker list", "agent-worker list --json"},
	"ls":   {"agent-worker ls"},
	"info": {"agent-worker info alice", "agent-worker info @review"},
	"send": {
		"agent-worker send @global 'hi @alice, what should we build first?'",
		"agent-worker send bob \"please review\"",
	},
	"ask": {
		"agent-worker ask alice 'and after that?'",
		"agent-worker ask parrot 'hello' --json",
	},
	"serve": {
		"agent-worker serve alice \"summarise the plan\"",
		"agent-worker serve alice \"hi\" --text",
	},
	"peek": {
		"agent-worker peek",
		"agent-worker peek @global:main -n 20 --follow",
	},
	"pause": {"agent-worker pause alice", "agent-worker pause @review"},
	"fork": {
		"# the review team as it was at message 12, paused for a look\nagent-worker fork @review:pr-1 --at 12 --tag pr-1-retry",
		"agent-worker fork @review --at 12 --tag try-2 --run --json",
	},
	"resume": {"agent-worker resume alice", "agent-worker resume @review"},
	"reset":  {"agent-worker reset alice"},
	"cancel": {"agent-worker cancel alice", "agent-worker cancel run_4b49558288944313"},
	"schedule": {
		"agent-worker schedule alice set 30m --prompt 'post a standup'",
		"agent-worker schedule alice set '0 9 * * 1-5' --prompt 'plan the day'",
		"agent-worker schedule alice clear",
	},
	"budget": {
		"agent-worker budget @review set --usd 5 --runs 100",
		"agent-worker budget @review clear",
	},
	"stop": {
		"agent-worker stop alice",
		"agent-worker stop @hello",
		"# stop the daemon, and every workflow with it\nagent-worker stop --all",
	},

	"run": {
		"agent-worker run examples/code-review/review.yaml",
		"agent-worker run review.yaml --tag pr-42 -- --pr 42",
		"agent-worker run hello.yaml --timeout 10m --json",
	},
	"start": {
		"agent-worker start hello.yaml --background",
		"agent-worker start review.yaml --background -- --pr 42",
	},
	"workflows":        {"agent-worker workflows", "agent-worker workflows accept @team"},
	"workflows accept": {"agent-worker workflows accept @team"},
	"tasks": {
		"agent-worker tasks",
		"agent-worker tasks @review --state pending",
	},
	"tasks add": {
		"agent-worker tasks add @global \"Release the API\" --assign lead",
		"agent-worker tasks add @global \"Write the migration\" --parent task-1 --after task-2 --assign dev",
		"agent-worker tasks add @review \"Review the parser\" --role reviewer",
	},
	"tasks show":   {"agent-worker tasks show task-3", "agent-worker tasks show task-3 --json"},
	"tasks cancel": {"agent-worker tasks cancel task-3 --reason \"the plan changed\""},
	"doc":          {"agent-worker doc list @review", "agent-worker doc read @review"},
	"doc read":     {"agent-worker doc read", "agent-worker doc read @review --file notes.md"},
	"doc write":    {"agent-worker doc write \"# Plan\"", "agent-worker doc write @review --file plan.md --from plan.md"},
	"doc append":   {"agent-worker doc append @review --file log.md --from notes.txt"},
	"doc list":     {"agent-worker doc list @review"},
	"proposals":    {"agent-worker proposals @review", "agent-worker proposals @review --active"},
	"search": {
		"agent-worker search @global building",
		"agent-worker search @review 'retry policy' --kind message -n 5",
	},
	"worktree":           {"agent-worker worktree list @team", "agent-worker worktree integrate alice@team"},
	"worktree list":      {"agent-worker worktree list @team"},
	"skills list":        {"agent-worker skills list", "agent-worker skills list @review --json"},
	"skills show":        {"agent-worker skills show implement", "agent-worker skills show implement @review --json"},
	"effort":             {"agent-worker effort start ./src implement --agent alice@review", "agent-worker effort next --agent alice@review --proof plan_summary='add the flag'"},
	"effort start":       {"agent-worker effort start ./src implement --agent alice@review", "agent-worker effort start /work/app implement --agent alice@review --mode solo"},
	"effort next":        {"agent-worker effort next --agent alice@review --proof plan_summary='add the flag' --notes 'plan in 1_IMPLEMENT_PLAN.md'"},
	"effort log":         {"agent-worker effort log 'kept the old flag for one release' --agent alice@review"},
	"effort finish":      {"agent-worker effort finish --agent alice@review --proof tests_run=42", "agent-worker effort finish --agent alice@review --abandon --reason 'superseded by #12'"},
	"effort show":        {"agent-worker effort show effort-3", "agent-worker effort show --agent alice@review --json"},
	"efforts":            {"agent-worker efforts", "agent-worker efforts ./src --all", "agent-worker efforts @review --json"},
	"worktree integrate": {"agent-worker worktree integrate alice@team", "agent-worker worktree integrate bob@team --into release", "agent-worker worktree integrate bob@team --repo app"},
	"worktree discard": {
		"agent-worker worktree discard bob@team --reason \"redo the lexer on top of main\"",
	},
	"worktree queue":      {"agent-worker worktree queue @team", "agent-worker worktree queue @team --all"},
	"worktree queue show": {"agent-worker worktree queue show mq-3"},
	"worktree dequeue":    {"agent-worker worktree dequeue mq-4 --reason \"not this one\""},

	"skills": {"agent-worker skills check examples/skills/implement/SKILL.md"},
	"skills check": {
		"agent-worker skills check examples/skills/implement/SKILL.md",
		"agent-worker skills check .agent-worker/skills/*/SKILL.md --json",
	},

	"runs":        {"agent-worker runs", "agent-worker runs @review -n 5 --failed"},
	"runs replay": {"agent-worker runs replay run_4b49558288944313", "agent-worker runs replay run_4b49558288944313 --json"},
	"logs":        {"agent-worker logs run_4b49558288944313", "agent-worker logs run_4b49558288944313 --follow", "agent-worker logs alice@team --follow"},

	"questions":     {"agent-worker questions", "agent-worker questions @review --all"},
	"answer":        {"agent-worker answer q_5f1c0e9a2b7d4c31 pg"},
	"approve":       {"agent-worker approve q_5f1c0e9a2b7d4c31"},
	"deny":          {"agent-worker deny q_5f1c0e9a2b7d4c31 --reason 'not on main'"},
	"notifications": {"agent-worker notifications", "agent-worker notifications --failed"},
	"notify":        {"agent-worker notify test @review"},
	"notify test":   {"agent-worker notify test @review"},

	"mcp-config": {
		"# your Claude Code joins as the external agent me\nagent-worker new me --backend external\nagent-worker mcp-config me > .mcp-aw.json",
		"agent-worker mcp-config me --format codex",
	},
	"hooks":           {"agent-worker hooks install me --dir ~/src/project"},
	"hooks install":   {"agent-worker hooks install me", "agent-worker hooks install me --dir ~/src/project"},
	"hooks uninstall": {"agent-worker hooks uninstall me --dir ~/src/project"},
	"sessions":        {"agent-worker sessions", "agent-worker sessions me --json"},
	"session":         {"agent-worker session continue me"},
	"session continue": {
		"# paste what it prints into the new session's first prompt\nagent-worker session continue me",
		"agent-worker session continue",
	},
	"hook": {
		"# what Claude Code runs from the hooks `hooks install` wrote\nagent-worker hook SessionStart --agent me",
		"# before each tool call: prints Claude's deny decision when the effort's phase refuses it\nagent-worker hook PreToolUse --agent me",
	},
	"statusline": {
		"# what Claude Code's status line runs (hooks install writes it); prints [implement:P2] 1 unread\nagent-worker statusline --agent me",
		"agent-worker statusline --agent me --json",
	},
	"completion": {
		"agent-worker completion bash > ~/.local/share/bash-completion/completions/agent-worker",
		"agent-worker completion zsh > \"${fpath[1]}/_agent-worker\"",
		"agent-worker completion fish > ~/.config/fish/completions/agent-worker.fish",
	},

	"help":    {"agent-worker help run", "agent-worker help tasks show"},
	"version": {"agent-worker version", "agent-worker version --json"},
}

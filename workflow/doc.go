// Package workflow reads workflow YAML for the daemon; the CLI only sends a
// file's path or content.
//
// Load and Parse turn a file into a File, reporting every problem at once
// as Problems, each with file:line:col and what to write instead: unknown
// keys (with the closest known one), bad names, backends and schedules, and
// any ${{ }} variable that could not resolve. Unlike the TypeScript original,
// an unknown variable or a missing system_prompt file is an error, never
// literal text.
//
// A File becomes a running team in three steps, each its own call so the
// daemon controls when they happen: ParseParams reads the params given after
// `--`, RunSetup runs the setup commands, and Resolve interpolates every
// string under a tag into an Instance. Agent.BackendConfig is the backend
// config the daemon stores for each agent.
//
// Variables are ${{ env.X }}, ${{ params.X }}, ${{ workflow.name }},
// ${{ workflow.tag }}, ${{ source.dir }} and the as: name of a setup step.
// They are filled in kickoff, setup shell, system_prompt (inline or the
// file's contents), wakeup_prompt, env values, mcp_servers fields and
// context.documents.dir; never in config:, which goes to the backend as is.
// A webhook trigger's message may also use ${{ body.PATH }}: Resolve leaves
// it in place and RenderTrigger fills it from each delivery's JSON body.
//
// A workflow file, a system_prompt file and a resolved system prompt are at
// most 1 MiB each (MaxFileBytes, MaxSystemPromptBytes); CheckAgentName and
// CheckScopeName are the one definition of agent, workflow and tag names.
//
// workspace: {git: worktree, base: BRANCH} asks for a git worktree per
// agent; the parser checks the keys and the branch name (CheckBranchName,
// the one check of a branch name), and BranchName names each agent's
// branch. Whether the directory is a repository and the base exists is the
// daemon's check when the workflow loads (host/worktrees), since it needs
// git.
//
// An agent's sandbox: {read: [paths], write: [paths], network: none | all
// | [ports], mode: on | off} widens (or, with mode: off, lifts) the
// confinement of its runs. Its paths take no variables: Parse resolves
// them against the file's folder, expands ~ to the user's home and stores
// them absolute. codex's own sandbox mode is config: {sandbox_mode: ...}.
//
// An agent's limits: {pids: N, memory: SIZE, cpu: CORES} bounds one run,
// all its processes together (the daemon writes them to the run's
// cgroup); each value is read by sdk/backend's one parser of it, which the
// daemon's --run-limits shares, and max lifts one.
//
// ParseSchedule is the one parser of agent schedules: the loader, the
// daemon's `new` and `schedule set`, and the scheduler that fires them all
// call it, so a schedule that loads is a schedule that fires.
//
// The package imports only the standard library, go.yaml.in/yaml/v3 (the
// maintained fork of gopkg.in/yaml.v3), robfig/cron (inside
// ParseSchedule), internal/yamlerr (the line of a YAML syntax error) and
// sdk/backend (for the agent config types). Every other problem is placed
// at the line and column of its yaml.Node.
package workflow

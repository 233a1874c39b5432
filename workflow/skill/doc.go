// Package skill reads skills: SKILL.md files that lead an agent through a
// procedure one phase at a time (issue 43). It is the leaf the daemon's
// efforts, gates and checkpoints build on; it runs nothing and keeps no
// state, so the CLI's `skills check` uses it without a daemon.
//
// A skill file is the common SKILL.md of Claude Code, Codex and Gemini CLI
// (YAML front matter between --- lines with name and description, then a
// Markdown body) plus our keys: phases, each with instructions, tools
// (allow and deny rules), proof (typed fields the agent gives to leave
// it), evidence (what the daemon must have seen in it) and artifacts; next
// and directives. Parse and Load report every problem of a file at once as
// workflow.Problems, each at its line and column in the whole file. Keys
// of other tools (license, allowed-tools, metadata…) are ignored; an
// unknown key close to one of ours is reported as a misspelling.
//
// The rest are pure functions of a parsed phase, for the daemon to call:
// Phase.Check decides a tool call (deny wins over allow, an allow list
// refuses the rest, the effort tools are always allowed) and words a
// refusal a model can act on; Phase.CheckEvidence matches observations of
// the phase against its evidence; Phase.CheckProof and CheckProofStrings
// type the proof and list everything wrong with it. Discover finds the
// skills of a list of folders, <folder>/<name>/SKILL.md, the first folder
// winning a name clash.
//
// Shell rules (shell:GLOB) and shell evidence see a command line as its
// simple commands (shellParts says exactly what is recognised): chains,
// pipes, subshells, substitutions and the scripts of sh -c and eval are
// split or read inside, and leading assignments, env and similar wrappers,
// quoting and a program's directory do not hide a command. It is not a
// shell: a program named by a variable, or run by xargs or find -exec, is
// not seen; so a deny list is a guard rail, and an allow list, which
// refuses what it cannot read, is the strict form. docs/skills.md is the
// user's guide.
package skill

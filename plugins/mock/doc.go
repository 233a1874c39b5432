// Package mock is the scripted backend (backend name "mock"): it behaves
// like an agent without a model, so that workflows, the daemon and the
// suites can be tested offline and deterministically, faults included.
//
// Each run takes its context from the request (or fetches it from an
// older daemon), emits the prompt it would send a model as a log event,
// and then follows a script from the agent's config, connecting to the
// daemon as its agent at the first step that acts:
//
//	{"script": [
//	  {"reply": "on it, {{first_sender}}"},
//	  {"tool": "team_doc_append", "args": {"content": "- {{name}} was here\n"}},
//	  {"fail": "flaky", "when": {"attempt": 1}},
//	  {"result": "{{name}} done."}
//	]}
//
// or {"script_file": "mock.yaml"} (YAML or JSON, relative to the project
// directory; a YAML file is read with yaml.v3, and its errors name the
// file and line). The "env" and "sandbox" keys may sit beside them; they are
// the daemon's, as for every backend: it puts env in the mock's environment
// and confines the run's process to its sandbox. Steps, one action each:
//
//	reply: text [to: agent]      channel_send (a DM with to)
//	tool: name [args: {...}]     any daemon tool; emits tool_call and tool_result
//	sleep: 500ms                 wait, with a heartbeat every second
//	text: delta                  a text event
//	result: final text           the result event
//	usage: {input, output, cost} a usage event (tokens, USD)
//	session: id                  a session event
//	fail: message [permanent: true]   end the run with an error
//	hang: true                   block without events until cancelled
//	crash: code                  exit the process at once with code
//	flood: n                     n text events, as fast as possible
//	stderr: line                 a line on stderr
//	spawn: [cmd, args...]        start a child process and leave it running
//	shell: command line          run it with sh -c in the project directory,
//	                             as an agent's shell tool would, and send its
//	                             output (stdout and stderr, at most 64 KiB,
//	                             then "exit status N" if it failed) as a text
//	                             event; a failing command does not end the run.
//	                             Under a sandbox the command gets only the
//	                             tools' network (sandbox.RunTool), and each
//	                             path or port the sandbox refused it follows
//	                             as a sandbox event (sandbox.Explain). It is
//	                             also a tool call "shell" whose result
//	                             carries the exit status, and {{last.exit}}
//	                             is that status
//	write: path [content: text]  write the file (relative to the project
//	                             directory, parents made) as an agent's
//	                             write_file would: a tool call "write_file";
//	                             {{last.path}} is the path
//
// A shell or write step may add repo: name, one of the workspace's
// repositories (the request's Repos): the command then runs in that
// repository's directory and the path is relative to it. A write to a
// read-only repository is an error result, as the sdk backend's
// write_file refuses it; a shell step there runs, and the run's sandbox
// keeps the repository read-only. A repo the run does not have ends the
// run with a permanent error naming those it has.
//
// Shell and write steps first ask the daemon's gate (worker.Gate: the
// phase of the agent's effort decides, issue 43). A refused step does not
// run: it is a gate event with the reason and an error result, the next
// steps read the reason as {{last.error}}, and the script goes on, as a
// model would. A daemon that cannot be asked refuses.
//
// Any step may add when: {attempt: n} to run only on that attempt,
// when: {from: name} to run only if an inbox message comes from name, or
// when: {text: s} to run only if an inbox message contains s. Text may use
// {{name}}, {{workflow}}, {{tag}}, {{attempt}}, {{first_sender}},
// {{proposal}} (the first prop-N the inbox mentions), {{last.FIELD}} and
// {{step.N.FIELD}} (a top-level field of the structured result of the
// last tool step, or of step N, e.g. the id task_create returned; "" when
// missing), {{resume}} (the session
// the daemon asked to resume), {{state_dir}} and {{inbox_summary}}
// ("from: text" of each inbox message without @, joined with "; ", at most
// 200 characters). A tool step that the daemon
// refuses is reported as an error result, its {{last.error}} is the
// daemon's message, and the script goes on, as a model would; any other
// failure ends the run.
//
// Without a script the mock does what the seed's mock did: with an inbox,
// it posts "[<name>] Processed: {{inbox_summary}}" (no @, so it wakes no
// one), then it returns the result "<name> done.". The mock never acks; the
// daemon acks when the run succeeds.
package mock

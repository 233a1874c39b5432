package main

import (
	"context"
	"io"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// fakeSource answers like a daemon with two agents, a workflow, a run and
// a pending approval.
var fakeSource = completionSource{
	agents: func(context.Context) []candidate {
		return []candidate{{"alice", "idle, mock"}, {"bob@review:pr-1", "idle, mock"}}
	},
	workflows: func(context.Context) []candidate {
		return []candidate{{"@global", ""}, {"@review:pr-1", ""}}
	},
	runs:      func(context.Context) []candidate { return []candidate{{"run-1", ""}} },
	questions: func(context.Context) []candidate { return nil },
	approvals: func(context.Context) []candidate { return []candidate{{"q-7", ""}} },
}

// TestCompletion walks the real command tree: the words are a command line
// after the program's name, the last one being typed.
func TestCompletion(t *testing.T) {
	t.Parallel()
	tests := map[string]struct {
		words []string
		want  []string
		files bool
	}{
		"commands":                {[]string{"pe"}, []string{"peek"}, false},
		"every command":           {[]string{"wor"}, []string{"workflows", "worktree"}, false},
		"root flag":               {[]string{"--v"}, []string{"--version"}, false},
		"subcommands":             {[]string{"doc", ""}, []string{"read", "write", "append", "list"}, false},
		"subcommand prefix":       {[]string{"doc", "a"}, []string{"append"}, false},
		"nested subcommand flags": {[]string{"doc", "read", "--f"}, []string{"--file"}, false},
		"flags after an argument": {[]string{"new", "x", "--back"}, []string{"--backend"}, false},
		"single-dash flags":       {[]string{"runs", "-fa"}, []string{"-failed"}, false},
		"one-letter flag":         {[]string{"runs", "-"}, []string{"--failed", "--home", "--json", "-n", "--request-timeout"}, false},
		"agent argument":          {[]string{"ask", ""}, []string{"alice", "bob@review:pr-1"}, false},
		"agent prefix":            {[]string{"info", "b"}, []string{"bob@review:pr-1"}, false},
		"target is both":          {[]string{"info", ""}, []string{"alice", "bob@review:pr-1", "@global", "@review:pr-1"}, false},
		"workflow argument":       {[]string{"proposals", ""}, []string{"@global", "@review:pr-1"}, false},
		"target after colon":      {[]string{"stop", "@review:p"}, []string{"@review:pr-1"}, false},
		"run id or agent":         {[]string{"cancel", ""}, []string{"run-1", "alice", "bob@review:pr-1"}, false},
		"logs: run id or agent":   {[]string{"logs", ""}, []string{"run-1", "alice", "bob@review:pr-1"}, false},
		"approval id":             {[]string{"approve", ""}, []string{"q-7"}, false},
		"second argument is free": {[]string{"ask", "alice", ""}, nil, false},
		"literal after agent":     {[]string{"budget", "alice", ""}, []string{"set", "clear"}, false},
		"subcommand or workflow":  {[]string{"tasks", ""}, []string{"add", "show", "cancel", "@global", "@review:pr-1"}, false},
		"flag value from usage":   {[]string{"daemon", "--sandbox", ""}, []string{"auto", "required", "off"}, false},
		"flag value is an agent":  {[]string{"tasks", "add", "--assign", "a"}, []string{"alice"}, false},
		"tasks show's board":      {[]string{"tasks", "show", "task-1", ""}, []string{"@global", "@review:pr-1"}, false},
		"value taken, flag done":  {[]string{"mcp-config", "--format", "claude", ""}, []string{"alice", "bob@review:pr-1"}, false},
		"bare flag value skipped": {[]string{"worktree", "discard", "alice", "--reason", ""}, nil, false},
		"workflow file":           {[]string{"run", ""}, nil, true},
		"file flag":               {[]string{"new", "x", "--system-file", ""}, nil, true},
		"after --":                {[]string{"run", "w.yaml", "--", ""}, nil, true},
		"shells":                  {[]string{"completion", ""}, []string{"bash", "zsh", "fish"}, false},
		"unknown command":         {[]string{"frobnicate", ""}, nil, false},
		"help of a command":       {[]string{"help", "wor"}, []string{"workflows", "worktree"}, false},
		"help of a subcommand":    {[]string{"help", "tasks", ""}, []string{"add", "show", "cancel"}, false},
		"help of no command":      {[]string{"help", "nosuch", ""}, nil, false},
	}
	root := newRoot(&env{stdout: io.Discard, stderr: io.Discard})
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got := complete(context.Background(), root, tc.words, fakeSource)
			var values []string
			for _, c := range got.cands {
				values = append(values, c.value)
			}
			if diff := cmp.Diff(tc.want, values); diff != "" || got.files != tc.files {
				t.Errorf("complete %q: files %v (want %v), candidates (-want +got):\n%s", tc.words, got.files, tc.files, diff)
			}
		})
	}
}

// With no daemon, completion still knows the tree and asks nothing.
func TestCompletionWithoutDaemon(t *testing.T) {
	t.Parallel()
	root := newRoot(&env{stdout: io.Discard, stderr: io.Discard})
	got := complete(context.Background(), root, []string{"info", ""}, completionSource{})
	if len(got.cands) != 0 || got.files {
		t.Errorf("info with no daemon completes %+v", got)
	}
	got = complete(context.Background(), root, []string{"info", "--j"}, completionSource{})
	if len(got.cands) != 1 || got.cands[0].value != "--json" {
		t.Errorf("info --j with no daemon completes %+v, want --json", got)
	}
}

func TestCompletionHome(t *testing.T) {
	t.Parallel()
	tests := map[string]struct {
		words []string
		want  string
	}{
		"flag":           {[]string{"info", "--home", "/h", ""}, "/h"},
		"equals":         {[]string{"--home=/h", "info", ""}, "/h"},
		"being typed":    {[]string{"info", "--home", "/h"}, "default"},
		"single dash":    {[]string{"-home", "/h", "x"}, "/h"},
		"not the flag":   {[]string{"info", "home", "/h", ""}, "default"},
		"other flag":     {[]string{"info", "--homer", "/h", ""}, "default"},
		"no flag at all": {[]string{""}, "default"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got := completionHome(tc.words)
			if tc.want == "default" {
				tc.want = completionHome(nil)
			}
			if got != tc.want {
				t.Errorf("completionHome(%q) = %q, want %q", tc.words, got, tc.want)
			}
		})
	}
}

package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestParseOnly(t *testing.T) {
	t.Parallel()
	for name, tc := range map[string]struct {
		in      string
		want    map[string]bool
		wantErr bool
	}{
		"empty runs everything": {in: "", want: nil},
		"one":                   {in: "mcp", want: map[string]bool{"mcp": true}},
		"several with spaces":   {in: "mcp, pingpong", want: map[string]bool{"mcp": true, "pingpong": true}},
		"runs is the run path":  {in: "runs", want: map[string]bool{"mention": true, "pingpong": true, "run": true, "cold": true}},
		"cluster":               {in: "cluster", want: map[string]bool{"cluster": true}},
		"tracing":               {in: "tracing", want: map[string]bool{"tracing": true}},
		"unknown":               {in: "mcp,bogus", wantErr: true},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			got, err := parseOnly(tc.in)
			if (err != nil) != tc.wantErr {
				t.Fatalf("parseOnly(%q) error %v, want error %v", tc.in, err, tc.wantErr)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("parseOnly(%q) (-want +got):\n%s", tc.in, diff)
			}
		})
	}
}

func TestWants(t *testing.T) {
	t.Parallel()
	only, err := parseOnly("cluster")
	if err != nil {
		t.Fatal(err)
	}
	c := config{only: only}
	if c.mainTable() || !c.wants("cluster") || c.wants("mcp") {
		t.Errorf("-only cluster: mainTable %v, wants cluster %v, wants mcp %v", c.mainTable(), c.wants("cluster"), c.wants("mcp"))
	}
	if all := (config{}); !all.mainTable() || !all.wants("cluster") {
		t.Error("no -only must run the main table and the cluster")
	}
}

// A row's method is its footnote; rows measured alike share one, and a row
// without a method has none.
func TestMarkdownFootnotes(t *testing.T) {
	t.Parallel()
	tb := &table{machine: "test", rows: []row{
		{what: "a", ours: "1", method: "same way"},
		{what: "b", ours: "2"},
		{what: "c", ours: "3", ts: "4", method: "other way"},
		{what: "d", ours: "5", method: "same way"},
	}}
	md := tb.markdown()
	for _, want := range []string{
		"| a [1] | 1 | — | — | — |",
		"| b | 2 | — | — | — |",
		"| c [2] | 3 | — | 4 | — |",
		"| d [1] | 5 |",
		"1. same way\n2. other way\n",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("markdown lacks %q:\n%s", want, md)
		}
	}
	if strings.Count(md, "same way") != 1 {
		t.Errorf("a shared method is printed once:\n%s", md)
	}
}

func TestCount(t *testing.T) {
	t.Parallel()
	for in, want := range map[int]string{0: "0", 999: "999", 1000: "1,000", 20000: "20,000", 1000000: "1,000,000"} {
		if got := count(in); got != want {
			t.Errorf("count(%d) = %q, want %q", in, got, want)
		}
	}
}

// The TypeScript system's channel file is read as it grows: a line still
// being written is not taken until it is complete, and log lines are not
// an agent's message.
func TestTSChannel(t *testing.T) {
	t.Parallel()
	file := filepath.Join(t.TempDir(), "channel.jsonl")
	c := &tsChannel{file: file}
	if n, err := c.count(fromAgent("a")); err != nil || n != 0 {
		t.Fatalf("no file yet: count %d, %v", n, err)
	}
	write := func(s string) {
		f, err := os.OpenFile(file, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		if _, err := f.WriteString(s); err != nil {
			t.Fatal(err)
		}
	}
	write(`{"from":"workflow:a","content":"Running","kind":"system"}` + "\n" +
		`{"from":"a","content":"@b ping","kind":"tool_call"}` + "\n" +
		`{"from":"a","content":"@b ping"}` + "\n" +
		`{"from":"b","content":"@a p`)
	if n, err := c.count(fromAgent("a", "b")); err != nil || n != 1 {
		t.Fatalf("count = %d, %v; want 1 (the half-written line is not read)", n, err)
	}
	write(`ing"}` + "\n")
	e, err := c.next(fromAgent("b"), time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(tsEntry{From: "b", Content: "@a ping"}, e); diff != "" {
		t.Errorf("next (-want +got):\n%s", diff)
	}
	if _, err := c.next(fromAgent("b"), 10*time.Millisecond); err == nil {
		t.Error("next found a line that was already returned")
	}
}

// Command agent-worker-bench measures a real agent-worker daemon, with real
// plugin processes, real HTTP and MCP clients (the go-sdk's and the official
// TypeScript SDK's), beside the ceilings it is built on: raw SQLite and the
// MCP go-sdk's bare no-op server, all in one run on one machine. Then it
// measures a cluster of one to three daemons on a throwaway PostgreSQL
// server beside a daemon on the embedded store. It prints two Markdown
// tables; `make bench` runs it and docs/performance.md keeps the latest.
//
//	agent-worker-bench [-bin bin/agent-worker] [-plugins plugins.d] [-quick] [-only mcp|runs|sandbox|cluster] [-cpuprofile file] [-doc docs/performance.md]
package main

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"time"
)

type config struct {
	bin, plugins, work, tsCache string
	calls                       int    // channel_send calls per client kind (Go, TypeScript)
	quick                       bool   // small counts: a smoke run of every scenario
	only                        string // "mcp": only the store, the ceilings and channel_send; "runs"; "sandbox"; "search"; "cluster": only the cluster table
	cpuprofile                  string // where to save the daemon's CPU profile under channel_send load
	doc                         string // a Markdown file whose table section is replaced by this run's
	spares                      string // the daemon's --spares for the scenarios with spares ("": its default)
	sparesOff                   []string
}

func main() {
	var cfg config
	bare := flag.Bool("bare-server", false, "serve the go-sdk's bare no-op MCP server and print its URL (used by the bench itself)")
	home, _ := os.UserHomeDir()
	flag.StringVar(&cfg.bin, "bin", "bin/agent-worker", "the agent-worker binary to measure")
	flag.StringVar(&cfg.plugins, "plugins", "plugins.d", "plugins directory (first-party plugins built by `make plugins`)")
	flag.StringVar(&cfg.tsCache, "ts-cache", filepath.Join(home, ".cache", "agent-worker-bench"), "where the TypeScript MCP SDK is installed (outside the repository)")
	flag.IntVar(&cfg.calls, "calls", 50_000, "channel_send calls measured per client kind (Go, then TypeScript)")
	flag.BoolVar(&cfg.quick, "quick", false, "small counts: check every scenario runs, numbers are not meaningful")
	flag.StringVar(&cfg.only, "only", "", "run only these scenarios: mcp (store, ceilings and channel_send), runs (mention → reply and ping-pong), sandbox (mention → reply with the run sandbox off and on), search (my_inbox and search at 1,000,000 messages, channel_send CPU with search indexing on and off) or cluster (the table of a PostgreSQL cluster beside the embedded store)")
	flag.StringVar(&cfg.spares, "spares", "", "the daemon's --spares setting for the scenarios with warm spares (default: the daemon's own default)")
	flag.StringVar(&cfg.doc, "doc", "", "also write the table into this Markdown file, between its "+beginMark+" and "+endMark+" lines (make bench: docs/performance.md)")
	flag.StringVar(&cfg.cpuprofile, "cpuprofile", "", "save the daemon's CPU profile (from /debug/pprof) taken under the go-sdk channel_send load to this file")
	flag.Parse()
	if *bare {
		if err := serveBare(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		return
	}
	switch cfg.only {
	case "", "mcp", "runs", "sandbox", "search", "cluster":
	default:
		fail(fmt.Errorf("-only %q: use mcp, runs, sandbox, search or cluster", cfg.only))
	}
	cfg.sparesOff = []string{"--spares", "0"}
	if cfg.quick {
		cfg.calls = 2_000
	}
	for _, p := range []*string{&cfg.bin, &cfg.plugins} {
		abs, err := filepath.Abs(*p)
		if err != nil {
			fail(err)
		}
		*p = abs
	}
	work, err := os.MkdirTemp("", "agent-worker-bench-")
	if err != nil {
		fail(err)
	}
	defer os.RemoveAll(work)
	cfg.work = work
	if err := run(context.Background(), cfg); err != nil {
		fail(err)
	}
}

// run measures the main table, then the cluster's, as cfg.only asks,
// printing each and writing it into cfg.doc as soon as it is measured.
func run(ctx context.Context, cfg config) error {
	if cfg.only != "cluster" {
		t, err := measure(ctx, cfg)
		if err != nil {
			return err
		}
		fmt.Print(t.markdown())
		if cfg.doc != "" {
			if err := writeDoc(cfg.doc, beginMark, endMark, t.markdown()); err != nil {
				return err
			}
			step("table written to %s", cfg.doc)
		}
	}
	if cfg.only != "" && cfg.only != "cluster" {
		return nil
	}
	ct, err := measureCluster(ctx, cfg)
	if err != nil || ct == nil { // nil: skipped, and measureCluster said why
		return err
	}
	fmt.Print("\n" + ct.markdown())
	if cfg.doc != "" {
		if err := writeDoc(cfg.doc, clusterBeginMark, clusterEndMark, ct.markdown()); err != nil {
			return err
		}
		step("cluster table written to %s", cfg.doc)
	}
	return nil
}

// The lines between which -doc replaces a file's main table, and its
// cluster table.
const (
	beginMark        = "<!-- bench:begin -->"
	endMark          = "<!-- bench:end -->"
	clusterBeginMark = "<!-- bench-cluster:begin -->"
	clusterEndMark   = "<!-- bench-cluster:end -->"
)

// writeDoc replaces what lies between the marks begin and end in file
// with table.
func writeDoc(file, begin, end, table string) error {
	b, err := os.ReadFile(file)
	if err != nil {
		return err
	}
	s := string(b)
	i, j := strings.Index(s, begin), strings.Index(s, end)
	if i < 0 || j < i {
		return fmt.Errorf("%s: no %s … %s section to replace", file, begin, end)
	}
	s = s[:i+len(begin)] + "\n" + table + s[j:]
	return os.WriteFile(file, []byte(s), 0o644)
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "agent-worker-bench:", err)
	os.Exit(1)
}

// step prints what the bench is doing, for a run that takes minutes.
func step(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "%s  "+format+"\n", append([]any{time.Now().Format("15:04:05")}, args...)...)
}

// machine describes where the table was measured.
func machine() string {
	cpu := "unknown CPU"
	if f, err := os.Open("/proc/cpuinfo"); err == nil {
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			if v, ok := strings.CutPrefix(sc.Text(), "model name"); ok {
				cpu = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(v), ":"))
				break
			}
		}
		f.Close()
	}
	kernel, _ := os.ReadFile("/proc/sys/kernel/osrelease")
	node, _ := exec.Command("node", "--version").Output()
	return fmt.Sprintf("%d cores (%s), Linux %s, %s, node %s", runtime.NumCPU(), cpu,
		strings.TrimSpace(string(kernel)), runtime.Version(), strings.TrimSpace(string(node)))
}

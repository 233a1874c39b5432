// Command agent-worker-bench measures a real agent-worker daemon, with real
// plugin processes, real HTTP and MCP clients (the go-sdk's and the official
// TypeScript SDK's), beside the ceilings it is built on: raw SQLite and the
// MCP go-sdk's bare no-op server, all in one run on one machine; every row
// on a fresh daemon and home unless it says otherwise. With -compare DIR
// it runs the same scenarios against the TypeScript system this project
// replaces (a checkout of it in DIR, outside this repository) and prints
// both columns from the one run. Then it measures a cluster of one to three
// daemons on a throwaway PostgreSQL server beside a daemon on the embedded
// store. It prints two Markdown tables, each row's method as a footnote;
// `make bench` runs it and docs/performance.md keeps the latest.
//
//	agent-worker-bench [-bin bin/agent-worker] [-plugins plugins.d] [-quick] [-only store,mcp,…] [-compare DIR] [-cpuprofile file] [-doc docs/performance.md]
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
	"slices"
	"strings"
	"time"
)

type config struct {
	bin, plugins, work, tsCache string
	calls                       int             // channel_send calls per client kind (Go, TypeScript)
	quick                       bool            // small counts: a smoke run of every scenario
	only                        map[string]bool // the scenarios -only names (nil: all)
	compare                     string          // a checkout of the TypeScript system to measure beside ours ("": none)
	bun                         string          // the bun binary that runs it ("": installed from npm into tsCache)
	cpuprofile                  string          // where to save the daemon's CPU profile under channel_send load
	doc                         string          // a Markdown file whose table section is replaced by this run's
	spares                      string          // the daemon's --spares for the scenarios with spares ("": its default)
	sparesOff                   []string
}

func main() {
	var cfg config
	bare := flag.String("bare-server", "", "serve the go-sdk's bare no-op MCP server, stateful or stateless, and print its URL (used by the bench itself)")
	barePlugin := flag.Bool("bare-plugin", false, "serve as a bare go-plugin plugin (the ping-pong rows' ceiling; used by the bench itself)")
	only := flag.String("only", "", "run only these scenarios, comma-separated: "+strings.Join(onlyNames(), ", ")+
		" (runs = mention,pingpong,run,cold; cluster: the table of a PostgreSQL cluster beside the embedded store)")
	home, _ := os.UserHomeDir()
	flag.StringVar(&cfg.bin, "bin", "bin/agent-worker", "the agent-worker binary to measure")
	flag.StringVar(&cfg.plugins, "plugins", "plugins.d", "plugins directory (first-party plugins built by `make plugins`)")
	flag.StringVar(&cfg.tsCache, "ts-cache", filepath.Join(home, ".cache", "agent-worker-bench"), "where the TypeScript MCP SDK and, for -compare, bun are installed (outside the repository)")
	flag.IntVar(&cfg.calls, "calls", 50_000, "channel_send calls measured per client kind (Go, then TypeScript)")
	flag.BoolVar(&cfg.quick, "quick", false, "small counts: check every scenario runs, numbers are not meaningful")
	flag.StringVar(&cfg.compare, "compare", "", "a checkout of the TypeScript system (lidessen/moniro at "+tsCommit+") to run the same scenarios against, outside this repository, e.g. ~/.cache/agent-worker-bench/moniro; its dependencies are installed with npm when missing")
	flag.StringVar(&cfg.bun, "bun", "", "the bun that runs the TypeScript system (default: bun "+bunVersion+" installed with npm into -ts-cache)")
	flag.StringVar(&cfg.spares, "spares", "", "the daemon's --spares setting for the scenarios with warm spares (default: the daemon's own default)")
	flag.StringVar(&cfg.doc, "doc", "", "also write the table into these Markdown files (comma-separated), between their "+beginMark+" and "+endMark+" lines, and the cluster's table into the first (make bench: docs/performance.md,README.md)")
	flag.StringVar(&cfg.cpuprofile, "cpuprofile", "", "save the daemon's CPU profile (from /debug/pprof, 10 s) taken under the go-sdk channel_send load to this file, and those under mention → reply, cold starts, ping-pong, the ring and the traced daemon's channel_send to FILE.mention, FILE.cold, FILE.pp, FILE.ring and FILE.tracing")
	flag.Parse()
	if *barePlugin {
		serveBarePlugin()
		return
	}
	if *bare != "" {
		if err := serveBare(*bare); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		return
	}
	var err error
	if cfg.only, err = parseOnly(*only); err != nil {
		fail(err)
	}
	cfg.sparesOff = []string{"--spares", "0"}
	if cfg.quick {
		cfg.calls = 1_000
	}
	for _, p := range []*string{&cfg.bin, &cfg.plugins, &cfg.compare, &cfg.bun} {
		if *p == "" || p == &cfg.bun && !strings.ContainsRune(*p, filepath.Separator) { // a bare -bun is looked up on PATH
			continue
		}
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
	cfg.work = work
	err = run(context.Background(), cfg)
	os.RemoveAll(work) // before fail's exit, which runs no deferred call
	if err != nil {
		fail(err)
	}
}

// run measures the main table, then the cluster's, as cfg.only asks,
// printing each and writing it into cfg.doc as soon as it is measured.
func run(ctx context.Context, cfg config) error {
	if cfg.mainTable() {
		t, err := measure(ctx, cfg)
		if err != nil {
			return err
		}
		fmt.Print(t.markdown())
		for _, doc := range cfg.docs() {
			if err := writeDoc(doc, beginMark, endMark, t.markdown()); err != nil {
				return err
			}
			step("table written to %s", doc)
		}
	}
	if !cfg.wants("cluster") {
		return nil
	}
	ct, err := measureCluster(ctx, cfg)
	if err != nil || ct == nil { // nil: skipped, and measureCluster said why
		return err
	}
	fmt.Print("\n" + ct.markdown())
	if docs := cfg.docs(); len(docs) > 0 {
		if err := writeDoc(docs[0], clusterBeginMark, clusterEndMark, ct.markdown()); err != nil {
			return err
		}
		step("cluster table written to %s", docs[0])
	}
	return nil
}

// docs are the files of -doc: the main table goes into each, the cluster's
// into the first.
func (cfg config) docs() []string {
	if cfg.doc == "" {
		return nil
	}
	return strings.Split(cfg.doc, ",")
}

// onlyNames are the names -only takes: the main table's scenarios, runs
// (the run path's rows) and cluster.
func onlyNames() []string {
	var names []string
	for _, s := range scenarios {
		names = append(names, s.name)
	}
	return append(names, "runs", "cluster")
}

// runsScenarios are what -only runs stands for.
var runsScenarios = []string{"mention", "pingpong", "run", "cold"}

// parseOnly reads -only's comma-separated names.
func parseOnly(s string) (map[string]bool, error) {
	if s == "" {
		return nil, nil
	}
	only := map[string]bool{}
	for _, name := range strings.Split(s, ",") {
		name = strings.TrimSpace(name)
		if !slices.Contains(onlyNames(), name) {
			return nil, fmt.Errorf("-only %q: use %s", name, strings.Join(onlyNames(), ", "))
		}
		if name == "runs" {
			for _, r := range runsScenarios {
				only[r] = true
			}
			continue
		}
		only[name] = true
	}
	return only, nil
}

// wants says whether the run includes scenario name.
func (c config) wants(name string) bool { return c.only == nil || c.only[name] }

// mainTable says whether any scenario of the main table runs.
func (c config) mainTable() bool {
	for _, s := range scenarios {
		if c.wants(s.name) {
			return true
		}
	}
	return false
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

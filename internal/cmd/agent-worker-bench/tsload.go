package main

import (
	"bufio"
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// tsSDKVersion is the official TypeScript MCP SDK the bench drives both
// servers with, installed from npm into a cache outside the repository.
const tsSDKVersion = "1.32.2"

//go:embed tsclient.mjs
var tsClientScript []byte

// tsClient installs the TypeScript SDK into dir when it is not there yet and
// writes the load script beside it (so that node resolves the SDK from the
// script's own node_modules). It returns the script's path.
func tsClient(dir string) (string, error) {
	if _, err := exec.LookPath("node"); err != nil {
		return "", errors.New("node is not installed")
	}
	pkg := filepath.Join(dir, "node_modules", "@modelcontextprotocol", "sdk", "package.json")
	var have struct{ Version string }
	if b, err := os.ReadFile(pkg); err == nil {
		_ = json.Unmarshal(b, &have)
	}
	if have.Version != tsSDKVersion {
		fmt.Fprintf(os.Stderr, "installing @modelcontextprotocol/sdk@%s into %s\n", tsSDKVersion, dir)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return "", err
		}
		cmd := exec.Command("npm", "install", "--prefix", dir, "--no-audit", "--no-fund", "--loglevel=error",
			"@modelcontextprotocol/sdk@"+tsSDKVersion)
		if out, err := cmd.CombinedOutput(); err != nil {
			return "", fmt.Errorf("npm install: %v: %s", err, strings.TrimSpace(string(out)))
		}
	}
	script := filepath.Join(dir, "agent-worker-bench-client.mjs")
	return script, os.WriteFile(script, tsClientScript, 0o644)
}

// tsLoad runs the TypeScript client: one session per token, client i on
// urls[i], calls in all, args[i] the arguments of client i. pid's CPU time
// is measured between the end of the warm-up and the result.
func tsLoad(ctx context.Context, script string, urls, tokens []string, calls int, tool string, args []map[string]any, pid int) (load, error) {
	job, _ := json.Marshal(map[string]any{"urls": urls, "tokens": tokens, "calls": calls, "tool": tool, "args": args})
	cmd := exec.CommandContext(ctx, "node", script, string(job))
	cmd.Dir = filepath.Dir(script)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		return load{}, err
	}
	if err := cmd.Start(); err != nil {
		return load{}, err
	}
	var l load
	var cpu0 time.Duration
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		line := sc.Text()
		if line == "start" {
			cpu0, _ = cpuTime(pid)
			continue
		}
		var r struct {
			Calls        int
			MS, P50, P99 float64
		}
		if json.Unmarshal([]byte(line), &r) == nil && r.Calls > 0 {
			cpu1, _ := cpuTime(pid)
			ms := func(f float64) time.Duration { return time.Duration(f * float64(time.Millisecond)) }
			l = load{calls: r.Calls, elapsed: ms(r.MS), p50: ms(r.P50), p99: ms(r.P99), cpu: cpu1 - cpu0}
		}
	}
	if err := cmd.Wait(); err != nil {
		return load{}, fmt.Errorf("typescript client: %v: %s", err, strings.TrimSpace(stderr.String()))
	}
	if l.calls == 0 {
		return load{}, fmt.Errorf("typescript client printed no result: %s", strings.TrimSpace(stderr.String()))
	}
	return l, nil
}

package claude

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/agent-worker/agent-worker/plugins/internal/fakemodel"
)

// TestFakeModelProcess is a helper, not a test: cmd/agent-worker's claude
// e2e tests may not import plugins/internal/fakemodel, so they run this
// test binary with AGENT_WORKER_CLAUDE_FAKEMODEL set to
// {"turns": [...], "held": bool}. It prints "url <base>" (and "arrived"
// once a held request waits), then obeys stdin lines: "add <turn JSON>"
// scripts another turn, "requests" prints "requests <JSON>". It stops
// when stdin closes.
func TestFakeModelProcess(t *testing.T) {
	script := os.Getenv("AGENT_WORKER_CLAUDE_FAKEMODEL")
	if script == "" {
		t.Skip("helper process for cmd/agent-worker's claude e2e tests")
	}
	var cfg struct {
		Turns []fakemodel.Turn `json:"turns"`
		Held  bool             `json:"held"`
	}
	if err := json.Unmarshal([]byte(script), &cfg); err != nil {
		t.Fatal(err)
	}
	var fm *fakemodel.Server
	if cfg.Held {
		h := fakemodel.NewHeld(t, cfg.Turns...)
		fm = h.Server
		fmt.Println("url", fm.URL)
		go func() {
			<-h.Arrived()
			fmt.Println("arrived")
		}()
	} else {
		fm = fakemodel.New(t, cfg.Turns...)
		fmt.Println("url", fm.URL)
	}
	sc := bufio.NewScanner(os.Stdin)
	for sc.Scan() {
		cmd, arg, _ := strings.Cut(sc.Text(), " ")
		switch cmd {
		case "add":
			var turn fakemodel.Turn
			if err := json.Unmarshal([]byte(arg), &turn); err != nil {
				t.Fatal(err)
			}
			fm.Add(turn)
		case "requests":
			b, _ := json.Marshal(fm.Requests())
			fmt.Println("requests", string(b))
		}
	}
}

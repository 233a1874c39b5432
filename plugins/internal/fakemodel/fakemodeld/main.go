// Command fakemodeld serves the scripted model server in its own process,
// for end-to-end tests in packages that may not import fakemodel. The
// script comes from $AGENT_WORKER_FAKEMODEL as {"turns": [...], "held":
// bool}. It prints "url <base URL>" (and "arrived" once a held request
// waits), then obeys stdin lines: "add <turn JSON>" scripts another turn,
// "requests" prints "requests <JSON>", "open <name>" opens a turn's gate
// (it prints "gate <name>" when a request waits there). When stdin closes
// it prints the requests once more and exits.
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"strings"

	"github.com/agent-worker/agent-worker/plugins/internal/fakemodel"
)

func main() {
	var cfg struct {
		Turns []fakemodel.Turn `json:"turns"`
		Held  bool             `json:"held"`
	}
	if err := json.Unmarshal([]byte(os.Getenv("AGENT_WORKER_FAKEMODEL")), &cfg); err != nil {
		fmt.Fprintln(os.Stderr, "fakemodeld: AGENT_WORKER_FAKEMODEL:", err)
		os.Exit(2)
	}
	var fm *fakemodel.Server
	if cfg.Held {
		h := fakemodel.StartHeld(cfg.Turns...)
		defer h.Close()
		fm = h.Server
		go func() {
			<-h.Arrived()
			fmt.Println("arrived")
		}()
	} else {
		fm = fakemodel.Start(cfg.Turns...)
		defer fm.Close()
	}
	fm.OnGate(func(name string) { fmt.Println("gate", name) })
	fmt.Println("url", fm.URL)
	requests := func() {
		b, _ := json.Marshal(fm.Requests())
		fmt.Println("requests", string(b))
	}
	sc := bufio.NewScanner(os.Stdin)
	for sc.Scan() {
		cmd, arg, _ := strings.Cut(sc.Text(), " ")
		switch cmd {
		case "add":
			var turn fakemodel.Turn
			if err := json.Unmarshal([]byte(arg), &turn); err != nil {
				fmt.Fprintln(os.Stderr, "fakemodeld: add:", err)
				continue
			}
			fm.Add(turn)
		case "requests":
			requests()
		case "open":
			fm.Open(arg)
		}
	}
	requests()
}

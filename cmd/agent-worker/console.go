package main

import (
	"context"
	"flag"
	"os"
	"os/exec"
	"runtime"
	"time"

	"github.com/peterbourgon/ff/v3/ffcli"
)

func consoleCmd(e *env) *ffcli.Command {
	fs := flag.NewFlagSet("console", flag.ContinueOnError)
	e.common(fs)
	noOpen := fs.Bool("no-open", false, "print the login link only; do not open a browser")
	return leaf("console", "console [--no-open] [--json]",
		"print a one-time login link to the web console (valid 60 s, works once) and open it in the browser when there is one", fs, [2]int{0, 0},
		func(ctx context.Context, args []string) error {
			c, err := e.connect(ctx, true)
			if err != nil {
				return err
			}
			l, err := c.ConsoleLogin(ctx)
			if err != nil {
				return err
			}
			if e.json {
				return e.printJSON(l)
			}
			e.printf("Open the console (this link works once, until %s):\n  %s\n", l.ExpiresAt.Local().Format(time.TimeOnly), l.URL)
			if !*noOpen {
				if opener := browserOpener(); opener != "" {
					if err := exec.Command(opener, l.URL).Start(); err == nil {
						e.printf("Opened with %s.\n", opener)
					}
				}
			}
			return nil
		})
}

// browserOpener is the command that opens a URL in the user's browser, or
// "" when there is none to use (no display, or no opener installed).
func browserOpener() string {
	name := "xdg-open"
	switch runtime.GOOS {
	case "darwin":
		name = "open"
	case "linux", "freebsd", "openbsd", "netbsd":
		if os.Getenv("DISPLAY") == "" && os.Getenv("WAYLAND_DISPLAY") == "" {
			return ""
		}
	default:
		return ""
	}
	if _, err := exec.LookPath(name); err != nil {
		return ""
	}
	return name
}

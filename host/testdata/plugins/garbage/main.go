// Command garbage is a plugin that writes to stdout before the handshake,
// which corrupts go-plugin's protocol line.
package main

import (
	"context"
	"fmt"

	"github.com/agent-worker/agent-worker/sdk/backend"
	"github.com/agent-worker/agent-worker/sdk/plugin"
)

func main() {
	fmt.Println("hello from a plugin that prints before serving")
	plugin.Serve(plugin.Config{Info: plugin.Info{Name: "garbage", Version: "0.0.1"},
		Backend: backend.Func(func(context.Context, backend.Request, backend.Events) error { return nil })})
}

//go:build pin

package host

// This file is never built. It keeps go.mod pinned to the versions of
// reference/go-libraries.md for modules that later parts of the kernel use
// (the MCP server and the fsnotify watchers), so `go mod tidy` does not drop
// them before their code lands.
import (
	_ "github.com/fsnotify/fsnotify"
	_ "github.com/modelcontextprotocol/go-sdk/mcp"
)

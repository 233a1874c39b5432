// Package mcpserver exposes the team context engine as the daemon's MCP
// server (streamable HTTP at /mcp): the tools agents use to talk, share
// documents, vote, pass resources, in a git workspace see, merge and throw
// away each other's worktrees, and, for a planner, spawn and stop helpers
// (tools.Names lists them all). A caller's identity comes from
// its bearer token (minted by the daemon, scoped to agent@workflow:tag),
// never from anything the caller says about itself.
package mcpserver

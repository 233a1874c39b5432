// Package mcpserver exposes the team context engine as the daemon's MCP
// server (streamable HTTP at /mcp): the seventeen tools agents use to talk,
// share documents, vote and pass resources. A caller's identity comes from
// its bearer token (minted by the daemon, scoped to agent@workflow:tag),
// never from anything the caller says about itself.
package mcpserver

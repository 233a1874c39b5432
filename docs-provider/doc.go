// Package docsprovider holds the first-party document providers (file, the
// default; sqlite; and postgres, for daemons that share a PostgreSQL store)
// as libraries in subpackages, built on sdk only and wrapped by thin mains
// in cmd/agent-worker-docs-<name>.
package docsprovider

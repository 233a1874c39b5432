// Package plugins holds the first-party backends (sdk, claude, codex, cursor,
// mock) as libraries in subpackages, each built on sdk only and wrapped by a
// thin main in cmd/agent-worker-backend-<name>.
package plugins

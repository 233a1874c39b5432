// Package postgresdocs is the document provider of a cluster: several
// daemons that share one PostgreSQL database (agent-worker daemon --store
// postgres://…) keep their teams' documents there too, so that whichever
// daemon serves a request sees the same documents. Its tables live in a
// schema of their own, agent_worker_docs, beside the store's tables and
// never among them; it behaves as the sqlite provider does, call for call,
// and passes the same conformance suite (sdk/docprovidertest).
// cmd/agent-worker-docs-postgres wraps it as a plugin.
package postgresdocs

// Package httpapi is the daemon's HTTP API: the routes of SPEC.md, the
// bearer-token check, request decoding with clear errors, the one error
// shape (api.Error, its HTTP status from api.HTTPStatus), server-sent
// event streams (`events`, `peek --follow`, `ask`), and the wire views of
// agents, workflows and runs. Handlers call the services they are given
// (Deps); they hold no state or rule of their own, so the CLI, the MCP
// server and a future console see one behaviour.
//
// Only host/ imports it. It may import the store, host/api, host/team and
// the service packages for their types; never host/ itself.
package httpapi

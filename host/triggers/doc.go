// Package triggers serves workflows' webhook triggers: it finds the
// trigger a delivery names, checks its HMAC signature against the secret
// in the daemon's environment, renders the trigger's message from the
// delivery's JSON body and posts it into the workflow's channel as
// `system`, once per delivery id. It also checks, when a workflow loads,
// that every trigger's secret is set, so a trigger can never be served
// unsigned.
//
// The HTTP layer hands it the raw request; the rules live here. It may
// import the store, host/api, host/team (to compose and announce the
// message like any other) and workflow (the one template renderer).
package triggers

// Package triggers serves workflows' webhook triggers: it finds the
// trigger a delivery names, checks it as the trigger's provider proves
// it (an HMAC signature; GitLab's token) against the secret in the
// daemon's environment, skips the events the trigger does not take,
// renders the trigger's message from the delivery's JSON body and posts
// it into the workflow's channel as `system`, once per delivery id, and
// arms the trigger's report. When the team goes idle the workflow
// manager has it Fire the armed reports: each moves, once, into the
// notification outbox as a GitLab note or a GitHub comment. It also
// checks, when a workflow loads, that every trigger's secret (and report
// token) is set, so a trigger can never be served unsigned.
//
// The HTTP layer hands it the raw request; the rules live here. It may
// import the store, host/api, host/team (to compose and announce the
// message like any other) and workflow (the one template renderer).
package triggers

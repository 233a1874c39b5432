// Package notify tells the owner about what needs them: a question or an
// approval waiting, an agent failed for good, a budget spent, the loop
// guard, a team that went idle, a cluster member gone. Each event goes to
// every webhook subscribed to it, in a workflow's notify: and in the
// daemon's --notify-config, as a JSON POST with a human text line, signed
// with HMAC-SHA256 of the body under the secret in the daemon's
// environment.
//
// Emit puts one delivery per subscription in the store's outbox
// (notify_deliveries) and wakes Run, the loop that sends what is due.
// A delivery is retried with exponential backoff (1 s doubling to 10 min,
// jittered) for a day, then marked failed (at once when the receiver
// refuses it with a 4xx); it is sent at least once (a
// daemon that dies after the receiver answered and before recording it
// sends it again, under the same delivery id), and a pending one is sent
// by the next daemon after a restart. In a cluster every member runs the
// loop, and a delivery is claimed by one member at a time (a lease).
// Secrets are read from the environment at each attempt and are never
// stored or logged.
//
// The parts that see events (host/scheduler, host/team, host/cluster,
// host/workflows; the questions and approvals through team.Service.Notify)
// call Notify through small interfaces of their own. It imports the store, host/api and
// workflow (the one parser of notify: and its events), never host/team,
// so that the team package may import it.
package notify

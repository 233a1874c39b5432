// Package cluster makes a daemon on a PostgreSQL store one member of a
// cluster of daemons sharing it: it registers the member and keeps it
// alive, takes back the work of members that died, carries the team's
// events between members (LISTEN/NOTIFY), and runs agents' turns as jobs
// of River, the job queue on the same database: one job per agent at a
// time, worked by whichever member has a free slot.
package cluster

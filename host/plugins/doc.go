// Package plugins owns every process the daemon starts from plugins.d: the
// catalog of plugin binaries (found in the plugins directories, examined
// concurrently within a deadline, watched for changes), the supervisor that
// runs each agent run as a fresh backend plugin process and makes sure it
// ends (timeouts, heartbeat, process-group kill, reaping after a crash),
// and the document providers a workflow names (the built-in file and
// sqlite ones in-process, an installed docs plugin out of process).
//
// It may import the store, host/api (wire types and errors), the sdk and
// host/internal; never host/ itself, the scheduler, the workflows or the
// HTTP layer. The scheduler reaches it through the one function it is
// given (Supervisor.Run); settling a run is the caller's (runspec.RunSpec.Settle).
package plugins

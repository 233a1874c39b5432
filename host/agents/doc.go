// Package agents registers, changes and removes agents, and owns the rules
// an agent definition must follow wherever it comes from: the one backend
// resolver (aliases, first-party backends, installed or broken plugins,
// external) that `new`, workflow files and `info` share, spec validation
// with defaults, the schedule check, and the warnings `new`, `info` and
// `status` show.
//
// It may import the store, host/api, workflow (the parsers) and the sdk;
// the plugin catalog and the scheduler reach it as small interfaces. It
// never imports host/ itself, the workflows or the HTTP layer.
package agents

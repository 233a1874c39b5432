// Package yamlerr places the errors of go.yaml.in/yaml/v3 in the file they
// come from, for the messages of every YAML reader of agent-worker: the
// workflow parser (and the daemon's --notify-config), the daemon's
// --config file (internal/configfile) and the mock backend's script files.
//
// Everything the readers report about a parsed file takes its line and
// column from the yaml.Node it is about. A syntax error has no node: the
// library (v3.0.6, the newest v3) returns it as text, "yaml: line N: …",
// with no typed error to read a line or column from (only the TypeError of
// a decode into Go values lists its problems, each still as text). So this
// package is the one place that reads positions out of yaml's error text,
// and its tests pin each kind of syntax error to the line a user sees in an
// editor. v4 of the library has a typed ParserError, but it is a release
// candidate and carries a line only; moving to it would shrink this
// package to a type switch.
//
// The package imports only the standard library and the YAML library, so a
// plugin (plugins/mock) may use it as well as the daemon.
package yamlerr

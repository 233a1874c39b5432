// Package docprovider defines what a document provider is: the interface an
// author implements to store a team's shared documents somewhere (files, a
// database, a wiki), and the name and size rules that the daemon and every
// provider apply alike, so a document name is judged the same wherever it
// lands. Provider authors implement Provider and run the conformance suite
// in sdk/docprovidertest; the daemon calls Provider through the plugin
// protocol's client (sdk/wire/client, which host/pluginclient dispenses).
// The package holds no gRPC: the wire is sdk/wire's and the SDK's internal
// glue's.
package docprovider

// Package plugintest runs a plugin implementation behind real gRPC inside
// the test process, so that a conformance suite or a plugin's own tests
// check what the daemon will see (conversions, error classes, streaming,
// cancellation) without building a binary. Use it from tests only:
//
//	p := plugintest.Docs(t, myprovider.New(t.TempDir()))
//	docprovidertest.Run(t, func(t *testing.T) docprovider.Provider { return plugintest.Docs(t, ...) })
package plugintest

package docs

// Observer hears the docs plugin processes start, stop and restart, for
// the daemon's metrics (host/metrics.Metrics). Its methods must return at
// once.
type Observer interface {
	PluginStarted(kind string)
	PluginStopped(kind string)
	PluginRestarted(kind, name string)
}

// nopObserver is the Observer of providers given none.
type nopObserver struct{}

func (nopObserver) PluginStarted(string)           {}
func (nopObserver) PluginStopped(string)           {}
func (nopObserver) PluginRestarted(string, string) {}

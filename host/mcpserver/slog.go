package mcpserver

import (
	"context"
	"log/slog"

	"github.com/hashicorp/go-hclog"
)

// slogHandler sends the MCP SDK's slog output to the daemon's hclog logger,
// so there is one log sink.
type slogHandler struct{ l hclog.Logger }

func (h slogHandler) Enabled(_ context.Context, level slog.Level) bool {
	return h.l.GetLevel() <= hclogLevel(level)
}

func (h slogHandler) Handle(_ context.Context, r slog.Record) error {
	args := make([]any, 0, 2*r.NumAttrs())
	r.Attrs(func(a slog.Attr) bool {
		args = append(args, a.Key, a.Value.Any())
		return true
	})
	h.l.Log(hclogLevel(r.Level), r.Message, args...)
	return nil
}

func (h slogHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	args := make([]any, 0, 2*len(attrs))
	for _, a := range attrs {
		args = append(args, a.Key, a.Value.Any())
	}
	return slogHandler{h.l.With(args...)}
}

func (h slogHandler) WithGroup(name string) slog.Handler { return slogHandler{h.l.Named(name)} }

func hclogLevel(l slog.Level) hclog.Level {
	switch {
	case l < slog.LevelDebug:
		return hclog.Trace
	case l < slog.LevelInfo:
		return hclog.Debug
	case l < slog.LevelWarn:
		return hclog.Info
	case l < slog.LevelError:
		return hclog.Warn
	}
	return hclog.Error
}

package host

import (
	"github.com/agent-worker/agent-worker/host/httpapi"
	"github.com/agent-worker/agent-worker/host/metrics"
	"github.com/agent-worker/agent-worker/host/notify"
)

// The metrics hear the notifier's attempts; the HTTP API lists its
// outbox.
var (
	_ notify.Observer       = (*metrics.Notifications)(nil)
	_ httpapi.Notifications = (*notify.Notifier)(nil)
)

// loadNotifyConfig reads --notify-config, if given: a bad file, or a
// secret_env the environment lacks, stops the daemon before it starts,
// naming file:line.
func (h *Host) loadNotifyConfig() (notify.Subscriptions, error) {
	if h.cfg.NotifyConfig == "" {
		return nil, nil
	}
	subs, err := notify.LoadConfig(h.cfg.NotifyConfig, h.cfg.LookupEnv)
	if err != nil {
		return nil, err
	}
	h.log.Info("notifications configured", "file", h.cfg.NotifyConfig, "webhooks", len(subs))
	return subs, nil
}

// newNotifier builds the notifier over the store: subs are the
// daemon-wide webhooks; its console links use the daemon's address once
// it listens.
func (h *Host) newNotifier(subs notify.Subscriptions) *notify.Notifier {
	return notify.New(notify.Config{DB: h.db, Member: h.memberID, Subs: subs, LookupEnv: h.cfg.LookupEnv,
		BaseURL: func() string {
			if h.ln == nil {
				return ""
			}
			return h.Info().URL()
		},
		Observer: h.metrics.Notifications(h.db.DeliveryCounts), Log: h.log.Named("notify")})
}

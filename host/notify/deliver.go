package notify

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/agent-worker/agent-worker/host/api"
	"github.com/agent-worker/agent-worker/host/internal/backoff"
	"github.com/agent-worker/agent-worker/store"
)

// Loop tuning: how many deliveries one pass claims (and sends at once),
// the longest the loop sleeps without looking (another member may have
// queued some), and how long delivered and failed ones are kept.
const (
	claimBatch = 8
	maxSleep   = 30 * time.Second
	keepFor    = 7 * 24 * time.Hour
	pruneEvery = time.Hour
)

// Run sends due deliveries until ctx ends: woken by Emit, by the next
// retry's time, and every maxSleep. Claims it still holds when ctx ends
// are let go, so that the next daemon sends them at once.
func (n *Notifier) Run(ctx context.Context) {
	defer func() {
		if err := n.cfg.DB.ReleaseDeliveries(context.WithoutCancel(ctx), n.cfg.Member); err != nil {
			n.log.Warn("let go of notifications being sent", "error", err)
		}
	}()
	pruned := time.Time{}
	for ctx.Err() == nil {
		if n.cfg.Now().Sub(pruned) >= pruneEvery {
			if k, err := n.cfg.DB.PruneDeliveries(ctx, n.cfg.Now().Add(-keepFor)); err != nil {
				n.log.Warn("forget old notifications", "error", err)
			} else if k > 0 {
				n.log.Debug("forgot old notifications", "count", k)
			}
			pruned = n.cfg.Now()
		}
		ds, err := n.cfg.DB.ClaimDeliveries(ctx, n.cfg.Member, n.cfg.Lease, claimBatch)
		if err != nil && ctx.Err() == nil {
			n.log.Warn("claim notifications", "error", err)
		}
		if len(ds) > 0 {
			n.sendAll(ctx, ds)
			continue // more may be due
		}
		n.sleep(ctx)
	}
}

// sleep waits for a wake, the next due delivery or maxSleep.
func (n *Notifier) sleep(ctx context.Context) {
	d := maxSleep
	if at, ok, err := n.cfg.DB.NextDeliveryDue(ctx); err == nil && ok {
		d = min(max(at.Sub(n.cfg.Now()), 10*time.Millisecond), maxSleep)
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-n.wake:
	case <-t.C:
	}
}

// sendAll sends a batch at once, each recorded as it ends.
func (n *Notifier) sendAll(ctx context.Context, ds []store.NotifyDelivery) {
	var wg sync.WaitGroup
	for _, d := range ds {
		wg.Go(func() { n.deliver(ctx, d) })
	}
	wg.Wait()
}

// deliver makes one attempt at d and records it.
func (n *Notifier) deliver(ctx context.Context, d store.NotifyDelivery) {
	a := n.send(ctx, d)
	if ctx.Err() != nil && !a.Delivered {
		return // the daemon is stopping: Run lets the claim go, unrecorded
	}
	outcome := "delivered"
	log := n.log.With("delivery", d.ID, "event", d.Event, "webhook", logURL(d.URL), "attempt", d.Attempts+1)
	if !a.Delivered {
		delay := Backoff(n.cfg.RetryBase, n.cfg.RetryMax, d.Attempts+1, rand.Float64())
		next := n.cfg.Now().Add(delay)
		switch {
		case refused(a.Status):
			outcome = "failed"
			log.Warn("notification failed for good: its receiver refused it; sending it again would not help", "error", a.Error)
		case next.Sub(d.CreatedAt) < n.cfg.GiveUp:
			a.Next, outcome = next, "retry"
			log.Info("notification not delivered; retrying", "in", delay.Round(time.Millisecond), "error", a.Error)
		default:
			outcome = "failed"
			log.Warn("notification failed for good: its receiver did not take it in time", "attempts", d.Attempts+1, "give_up", n.cfg.GiveUp, "error", a.Error)
		}
	} else {
		log.Debug("notification delivered", "status", a.Status)
	}
	ok, err := n.cfg.DB.RecordAttempt(context.WithoutCancel(ctx), d.ID, n.cfg.Member, a)
	switch {
	case err != nil:
		log.Warn("record a notification attempt", "error", err) // the lease ends and it is sent again
	case !ok:
		log.Info("notification taken over by another member while this one sent it")
	}
	n.cfg.Observer.NotifyAttempt(d.Event, outcome)
}

// send POSTs d once. A secret_env that is not set fails the attempt
// without sending anything unsigned.
func (n *Notifier) send(ctx context.Context, d store.NotifyDelivery) store.Attempt {
	body := []byte(d.Body)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, d.URL, bytes.NewReader(body))
	if err != nil {
		return store.Attempt{Error: "the webhook URL does not make a request: " + stripURL(err)}
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "agent-worker/"+api.Version)
	req.Header.Set(api.HeaderNotifyDelivery, d.ID)
	req.Header.Set(api.HeaderNotifyEvent, d.Event)
	if d.SecretEnv != "" {
		secret, _ := n.cfg.LookupEnv(d.SecretEnv)
		if secret == "" {
			what := "nothing was sent unsigned"
			if d.Auth != "" {
				what = "nothing was sent without its token"
			}
			return store.Attempt{Error: fmt.Sprintf("secret_env %s is not set in this daemon's environment (member %s): %s", d.SecretEnv, n.cfg.Member, what)}
		}
		authorize(req, d.Auth, secret, body)
	}
	resp, err := n.cfg.Client.Do(req)
	if err != nil {
		return store.Attempt{Error: "POST: " + stripURL(err)}
	}
	defer resp.Body.Close()
	snippet, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20)) // lets the connection be reused
	if resp.StatusCode >= 200 && resp.StatusCode < 300 {
		return store.Attempt{Delivered: true, Status: resp.StatusCode}
	}
	msg := "HTTP " + resp.Status
	if s := oneLine(snippet, 200); s != "" {
		msg += ": " + s
	}
	return store.Attempt{Status: resp.StatusCode, Error: msg}
}

// authorize proves who sends req: a report to GitLab or GitHub carries the
// API token as each wants it (GitLab's PRIVATE-TOKEN; GitHub's bearer
// token with its media type and API version); a notification is signed.
func authorize(req *http.Request, auth, secret string, body []byte) {
	switch auth {
	case store.AuthGitLab:
		req.Header.Set("PRIVATE-TOKEN", secret)
	case store.AuthGitHub:
		req.Header.Set("Authorization", "Bearer "+secret)
		req.Header.Set("Accept", "application/vnd.github+json")
		req.Header.Set("X-GitHub-Api-Version", "2022-11-28")
	default:
		req.Header.Set(api.HeaderNotifySignature, Sign(secret, body))
	}
}

// refused reports whether an HTTP status says the receiver will never
// take this request (400 bad request, 401/403 refused, 404/410 gone,
// 413 too large…), so it fails at once instead of after a day. A timeout
// (408), a conflict (409), too early (425) and rate limiting (429) pass,
// as do 5xx.
func refused(status int) bool {
	switch status {
	case http.StatusRequestTimeout, http.StatusConflict, http.StatusTooEarly, http.StatusTooManyRequests:
		return false
	}
	return status >= 400 && status < 500
}

// stripURL is a request error without the URL net/http quotes in it: a
// webhook URL may hold a token, and the error is stored and shown.
func stripURL(err error) string {
	if ue, ok := errors.AsType[*url.Error](err); ok {
		err = ue.Err
	}
	return err.Error()
}

// oneLine is a receiver's answer as one short line of valid text.
func oneLine(b []byte, limit int) string {
	return api.OneLine(strings.ToValidUTF8(string(b), "?"), limit+1)
}

// Sign returns the X-Agent-Worker-Signature-256 value of body under
// secret: "sha256=" and the hex HMAC-SHA256. A receiver computes the same
// over the raw body and compares in constant time.
func Sign(secret string, body []byte) string {
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write(body)
	return "sha256=" + hex.EncodeToString(mac.Sum(nil))
}

// backoffJitter spreads deliveries that failed together (a receiver's
// outage) by ± this fraction of the delay.
const backoffJitter = 0.1

// Backoff is the wait after failed attempt n (from 1): base, 2 × base,
// 4 × base … up to limit, each within ±10 %. r is a random number in
// [0, 1).
func Backoff(base, limit time.Duration, n int, r float64) time.Duration {
	return backoff.Policy{Base: base, Max: limit, Jitter: backoffJitter}.Delay(n, r)
}

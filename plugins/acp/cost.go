package acp

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"

	acpsdk "github.com/coder/acp-go-sdk"
)

// costFile keeps, in the agent's state directory, the session's
// cumulative cost as the agent last reported it (ACP's usage_update
// cost), so that the next run of the same session is charged only what
// it added.
const costFile = "acp-cost.json"

type sessionCost struct {
	Session string  `json:"session"`
	USD     float64 `json:"usd"`
}

// costs follows a session's cumulative cost through one run. Base is the
// cost before the run: 0 for a new session, the kept one for a loaded
// session, else what session/load's replay reported; a loaded session
// with neither is charged from its first report in the run.
type costs struct {
	base, last       float64
	baseKnown, shown bool
}

// baseOf reads the kept cost of session from dir.
func baseOf(dir, session string) (float64, bool) {
	b, err := os.ReadFile(filepath.Join(dir, costFile))
	var c sessionCost
	if err != nil || json.Unmarshal(b, &c) != nil || c.Session != session {
		return 0, false
	}
	return c.USD, true
}

// keep writes the session's cumulative cost into dir.
func keep(dir, session string, usd float64) error {
	if dir == "" {
		return nil
	}
	b, _ := json.Marshal(sessionCost{Session: session, USD: usd})
	return os.WriteFile(filepath.Join(dir, costFile), b, 0o600)
}

// report takes one usage_update; replayed ones only set the base. Costs
// in another currency than USD are not counted (the daemon's budgets are
// in USD).
func (c *costs) report(u *acpsdk.SessionUsageUpdate, replayed bool) {
	if u.Cost == nil || !strings.EqualFold(u.Cost.Currency, "USD") {
		return
	}
	switch {
	case replayed:
		if !c.baseKnown {
			c.base, c.baseKnown = u.Cost.Amount, true
		}
	case !c.baseKnown:
		c.base, c.baseKnown = u.Cost.Amount, true
		c.last, c.shown = u.Cost.Amount, true
	default:
		c.last, c.shown = u.Cost.Amount, true
	}
}

// run is what the run added to the session's cost, and whether the agent
// reported any in it.
func (c *costs) run() (float64, bool) {
	if !c.shown {
		return 0, false
	}
	return max(0, c.last-c.base), true
}

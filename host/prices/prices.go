package prices

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"

	"github.com/agent-worker/agent-worker/sdk/backend"
	"github.com/agent-worker/agent-worker/store"
)

// pricesJSON is the price table: per-million-token prices of the models
// the daemon can cost, with the date they were taken. Edit the file to
// add a model; a model missing there is "cost unknown", never a guess.
//
//go:embed prices.json
var pricesJSON []byte

// PriceTable is the embedded price table.
type PriceTable struct {
	// Taken is the date the prices were read from the vendors' pages.
	Taken  string                `json:"taken"`
	Source string                `json:"source"`
	Note   string                `json:"note"`
	Models map[string]ModelPrice `json:"models"`
}

// ModelPrice is what a million tokens of a model cost, in USD.
type ModelPrice struct {
	Input  float64 `json:"input"`
	Output float64 `json:"output"`
}

// Prices is the table the daemon costs runs with.
var Prices = mustPrices(pricesJSON)

func mustPrices(b []byte) PriceTable {
	var t PriceTable
	if err := json.Unmarshal(b, &t); err != nil {
		panic(fmt.Sprintf("host/prices/prices.json: %v", err))
	}
	return t
}

// anthropicDate is the date suffix of a pinned Anthropic model id
// (claude-sonnet-4-5-20250929) or a Vertex one (@20250929).
var anthropicDate = regexp.MustCompile(`[-@]\d{8}$`)

// Lookup finds the price of model, written as agents name it:
// "anthropic/claude-sonnet-4-5", "claude-sonnet-4-5-20250929", "gpt-4o".
// The provider prefix and an Anthropic date suffix are ignored, nothing
// else: an alias such as "sonnet" names a different model over time, so it
// has no price.
func (t PriceTable) Lookup(model string) (ModelPrice, bool) {
	m := strings.ToLower(strings.TrimSpace(model))
	if i := strings.LastIndex(m, "/"); i >= 0 {
		m = m[i+1:]
	}
	if p, ok := t.Models[m]; ok {
		return p, true
	}
	p, ok := t.Models[anthropicDate.ReplaceAllString(m, "")]
	return p, ok
}

// RunUsage is what the daemon records for a run: the backend's tokens and
// a cost. A cost the backend reported wins (it knows its discounts and
// cache use); otherwise the table prices the model's tokens; a model it
// does not know leaves the cost unknown.
func (t PriceTable) RunUsage(model string, u backend.Usage) store.Usage {
	out := store.Usage{InputTokens: u.InputTokens, OutputTokens: u.OutputTokens, Model: model}
	if u.CostUSD > 0 {
		out.CostUSD, out.CostSource = u.CostUSD, store.CostFromPlugin
		return out
	}
	if p, ok := t.Lookup(model); ok {
		out.CostUSD = (float64(u.InputTokens)*p.Input + float64(u.OutputTokens)*p.Output) / 1e6
		out.CostSource = store.CostFromPrices
	}
	return out
}

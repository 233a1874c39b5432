package prices

import (
	"math"
	"testing"
	"time"

	"github.com/agent-worker/agent-worker/sdk/backend"
	"github.com/agent-worker/agent-worker/store"
)

func TestPriceTableIsDatedAndComplete(t *testing.T) {
	t.Parallel()
	if _, err := time.Parse(time.DateOnly, Prices.Taken); err != nil {
		t.Errorf("prices.json's taken = %q: want the date the prices were read (YYYY-MM-DD)", Prices.Taken)
	}
	for name, p := range Prices.Models {
		if p.Input <= 0 || p.Output <= 0 {
			t.Errorf("%s has price %+v: every listed model needs both prices", name, p)
		}
	}
}

func TestRunUsagePricing(t *testing.T) {
	t.Parallel()
	tokens := backend.Usage{InputTokens: 1_000_000, OutputTokens: 100_000}
	for name, tc := range map[string]struct {
		model  string
		usage  backend.Usage
		cost   float64
		source string
	}{
		"provider prefix":        {"anthropic/claude-sonnet-4-5", tokens, 3 + 1.5, store.CostFromPrices},
		"dated anthropic id":     {"claude-haiku-4-5-20251001", tokens, 1 + 0.5, store.CostFromPrices},
		"openai":                 {"openai/gpt-4o", tokens, 2.5 + 1, store.CostFromPrices},
		"case and spaces":        {" GPT-4.1-Mini ", tokens, 0.4 + 0.16, store.CostFromPrices},
		"an alias has no price":  {"sonnet", tokens, 0, ""},
		"unknown model":          {"acme/mystery-9", tokens, 0, ""},
		"an openai date is kept": {"gpt-4o-2024-05-13", tokens, 0, ""},
		"the backend's cost wins": {"anthropic/claude-sonnet-4-5",
			backend.Usage{InputTokens: 1_000_000, CostUSD: 0.25}, 0.25, store.CostFromPlugin},
		"the backend's cost for an unknown model": {"mystery", backend.Usage{InputTokens: 5, CostUSD: 0.01}, 0.01, store.CostFromPlugin},
	} {
		t.Run(name, func(t *testing.T) {
			u := Prices.RunUsage(tc.model, tc.usage)
			if math.Abs(u.CostUSD-tc.cost) > 1e-9 || u.CostSource != tc.source || u.Model != tc.model ||
				u.InputTokens != tc.usage.InputTokens || u.OutputTokens != tc.usage.OutputTokens {
				t.Errorf("RunUsage(%q, %+v) = %+v, want cost %v from %q", tc.model, tc.usage, u, tc.cost, tc.source)
			}
			if known := u.CostKnown(); known != (tc.source != "") {
				t.Errorf("CostKnown = %v with source %q", known, tc.source)
			}
		})
	}
}

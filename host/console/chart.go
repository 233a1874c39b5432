package console

import (
	"cmp"
	"fmt"
	"html"
	"html/template"
	"slices"
	"strings"
	"time"

	"github.com/agent-worker/agent-worker/host/api"
)

// series is one line of the cost chart: what one workflow:tag or agent
// has spent, accumulated run by run.
type series struct {
	Name   string
	Color  string
	USD    float64
	Tokens int64
	Runs   int
	points []point
}

type point struct {
	at     time.Time
	usd    float64
	tokens int64
}

// maxSeries lines are drawn; the rest are summed into one.
const maxSeries = 8

var palette = []string{"#2563eb", "#dc2626", "#16a34a", "#9333ea", "#ea580c", "#0891b2", "#ca8a04", "#db2777", "#64748b"}

// spendSeries sums runs (newest first, as GET /runs lists them) by key,
// biggest spender first, each with its running total over time.
func spendSeries(runs []api.Run, now time.Time, key func(api.Run) string) chartData {
	byName := map[string]*series{}
	for i := len(runs) - 1; i >= 0; i-- {
		run := runs[i]
		s := byName[key(run)]
		if s == nil {
			s = &series{Name: key(run)}
			byName[key(run)] = s
		}
		at := run.StartedAt
		if run.EndedAt != nil {
			at = *run.EndedAt
		}
		if run.CostUSD != nil {
			s.USD += *run.CostUSD
		}
		s.Tokens += run.InputTokens + run.OutputTokens
		s.Runs++
		s.points = append(s.points, point{at: at, usd: s.USD, tokens: s.Tokens})
	}
	all := make([]*series, 0, len(byName))
	for _, s := range byName {
		all = append(all, s)
	}
	slices.SortFunc(all, func(a, b *series) int { // biggest first
		return cmp.Or(cmp.Compare(b.USD, a.USD), cmp.Compare(b.Tokens, a.Tokens), strings.Compare(a.Name, b.Name))
	})
	if len(all) > maxSeries {
		rest := &series{Name: fmt.Sprintf("%d others", len(all)-maxSeries+1)}
		for _, s := range all[maxSeries-1:] {
			rest.USD += s.USD
			rest.Tokens += s.Tokens
			rest.Runs += s.Runs
		}
		all = append(all[:maxSeries-1], rest)
	}
	d := chartData{now: now}
	for i, s := range all {
		s.Color = palette[i%len(palette)]
		d.Series = append(d.Series, *s)
		d.USD += s.USD
		d.Tokens += s.Tokens
	}
	return d
}

// chartData is a chart's lines and totals.
type chartData struct {
	Series []series
	USD    float64
	Tokens int64
	now    time.Time
}

// Chart geometry, in SVG user units.
const (
	chartW, chartH         = 720, 260
	padL, padR, padT, padB = 64, 16, 12, 28
	plotW, plotH           = chartW - padL - padR, chartH - padT - padB
	gridLines              = 4
	chartTimeLayout        = "Jan 2 15:04"
	chartTimeLayoutSameDay = "15:04"
	minSpan                = time.Minute
)

// drawChart draws the running totals as an SVG line chart: dollars when
// any run was priced, tokens otherwise (mock backends cost nothing). The
// SVG is built here, on the server; names are escaped.
func drawChart(d chartData) template.HTML {
	if len(d.Series) == 0 {
		return template.HTML(`<p class="empty">No runs yet.</p>`)
	}
	byUSD := d.USD > 0
	value := func(p point) float64 {
		if byUSD {
			return p.usd
		}
		return float64(p.tokens)
	}
	start, end := d.now, d.now
	top := 0.0
	for _, s := range d.Series {
		for _, p := range s.points {
			if p.at.Before(start) {
				start = p.at
			}
			top = max(top, value(p))
		}
	}
	if end.Sub(start) < minSpan {
		start = end.Add(-minSpan)
	}
	if top == 0 {
		top = 1
	}
	x := func(t time.Time) float64 { return padL + float64(t.Sub(start))/float64(end.Sub(start))*plotW }
	y := func(v float64) float64 { return padT + plotH - v/top*plotH }

	var b strings.Builder
	unit := "tokens"
	if byUSD {
		unit = "US dollars"
	}
	fmt.Fprintf(&b, `<svg class="chart" viewBox="0 0 %d %d" role="img" aria-label="running total of %s over time" xmlns="http://www.w3.org/2000/svg">`, chartW, chartH, unit)
	for i := 0; i <= gridLines; i++ {
		v := top * float64(i) / gridLines
		fmt.Fprintf(&b, `<line x1="%d" x2="%d" y1="%.1f" y2="%.1f" stroke="#e5e7eb"/>`, padL, chartW-padR, y(v), y(v))
		fmt.Fprintf(&b, `<text x="%d" y="%.1f" text-anchor="end" font-size="11" fill="#6b7280">%s</text>`, padL-6, y(v)+4, html.EscapeString(axisValue(v, byUSD)))
	}
	layout := chartTimeLayout
	if start.YearDay() == end.YearDay() && start.Year() == end.Year() {
		layout = chartTimeLayoutSameDay
	}
	fmt.Fprintf(&b, `<text x="%d" y="%d" font-size="11" fill="#6b7280">%s</text>`, padL, chartH-8, start.Local().Format(layout))
	fmt.Fprintf(&b, `<text x="%d" y="%d" text-anchor="end" font-size="11" fill="#6b7280">%s</text>`, chartW-padR, chartH-8, end.Local().Format(layout))
	for _, s := range d.Series {
		if len(s.points) == 0 {
			continue
		}
		// A step line: a total holds until the next run ends, and runs on
		// to now.
		var pts strings.Builder
		prev := 0.0
		fmt.Fprintf(&pts, "%.1f,%.1f", x(s.points[0].at), y(0))
		for _, p := range s.points {
			fmt.Fprintf(&pts, " %.1f,%.1f %.1f,%.1f", x(p.at), y(prev), x(p.at), y(value(p)))
			prev = value(p)
		}
		fmt.Fprintf(&pts, " %.1f,%.1f", x(end), y(prev))
		fmt.Fprintf(&b, `<polyline fill="none" stroke="%s" stroke-width="2" points="%s"><title>%s</title></polyline>`,
			s.Color, pts.String(), html.EscapeString(s.Name))
	}
	b.WriteString(`</svg>`)
	return template.HTML(b.String())
}

func axisValue(v float64, usd bool) string {
	switch {
	case usd && v < 1:
		return fmt.Sprintf("$%.3f", v)
	case usd:
		return fmt.Sprintf("$%.2f", v)
	case v >= 1e6:
		return fmt.Sprintf("%.1fM", v/1e6)
	case v >= 1e3:
		return fmt.Sprintf("%.1fk", v/1e3)
	}
	return fmt.Sprintf("%.0f", v)
}

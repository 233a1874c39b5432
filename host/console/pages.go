package console

import (
	"bytes"
	"embed"
	"fmt"
	"html/template"
	"io/fs"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/extension"
	"github.com/yuin/goldmark/renderer"
	"github.com/yuin/goldmark/util"

	"github.com/agent-worker/agent-worker/host/api"
)

//go:embed templates/*.html
var templateFS embed.FS

//go:embed static
var staticFS embed.FS

// staticHandler serves the console's script and style sheet from the
// binary. They change only with the daemon, so a browser may keep them
// for an hour.
func staticHandler() http.Handler {
	sub, err := fs.Sub(staticFS, "static")
	if err != nil {
		panic(err) // the embed pattern above guarantees the directory
	}
	files := http.StripPrefix("/console/static/", http.FileServerFS(sub))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "public, max-age=3600")
		files.ServeHTTP(w, r)
	})
}

// pages holds one template set per page, each the layout plus the page.
type pages struct {
	byName map[string]*template.Template
	frags  *template.Template
}

// pageNames are the templates/<name>.html that fill the layout.
var pageNames = []string{"overview", "team", "docs", "doc", "resource", "runs", "run", "cost", "plugins", "search", "effort", "artifact"}

func mustParsePages() *pages {
	funcs := template.FuncMap{
		"ago": ago, "dur": duration, "usd": usd, "tokens": tokenCount,
		"markdown": renderMarkdown, "markdownText": renderMarkdownText, "fold": fold, "short": short,
		"teamURL": func(target string) string {
			t, err := api.ParseTarget(target)
			if err != nil {
				return "/console/"
			}
			return teamPath(t)
		},
		"docURL": func(t api.Target, p string) string {
			return "/console/docs/" + url.PathEscape(t.Workflow) + "/" + url.PathEscape(t.Tag) + "/" + escapePath(p)
		},
		"pathEscape": url.PathEscape, "queryEscape": url.QueryEscape, "join": strings.Join,
		"runsOf": func(target string) string { return "/console/runs?target=" + url.QueryEscape(target) },
		"dict": func(kv ...any) (map[string]any, error) {
			if len(kv)%2 != 0 {
				return nil, fmt.Errorf("dict: odd number of arguments")
			}
			m := make(map[string]any, len(kv)/2)
			for i := 0; i < len(kv); i += 2 {
				k, ok := kv[i].(string)
				if !ok {
					return nil, fmt.Errorf("dict: key %v is not a string", kv[i])
				}
				m[k] = kv[i+1]
			}
			return m, nil
		},
		"deref":   func(p *float64) float64 { return *p },
		"deref64": func(p *int64) int64 { return *p },
		"add":     func(a, b int64) int64 { return a + b },
		"float":   toFloat,
		"votes": func(p api.Proposal, option string) int {
			n := 0
			for _, v := range p.Votes {
				if v.Choice == option {
					n++
				}
			}
			return n
		},
		"pct": func(part, whole float64) int {
			if whole <= 0 {
				return 0
			}
			return min(100, int(part/whole*100))
		},
	}
	base := template.Must(template.New("layout.html").Funcs(funcs).ParseFS(templateFS, "templates/layout.html", "templates/parts.html", "templates/needsyou.html"))
	p := &pages{byName: map[string]*template.Template{}, frags: base}
	for _, name := range pageNames {
		t := template.Must(template.Must(base.Clone()).ParseFS(templateFS, "templates/"+name+".html"))
		p.byName[name] = t
	}
	return p
}

// pageData is what the layout needs around a page's own data.
type pageData struct {
	Title string
	CSRF  string
	Nav   string
	Data  any
}

// render writes a whole page.
func (p *pages) render(w http.ResponseWriter, r *http.Request, name string, ss session, title string, data any) error {
	t, ok := p.byName[name]
	if !ok {
		return fmt.Errorf("console: no page template %q", name)
	}
	var b bytes.Buffer
	if err := t.ExecuteTemplate(&b, "layout.html", pageData{Title: title, CSRF: ss.csrf, Nav: name, Data: data}); err != nil {
		return fmt.Errorf("render %s: %w", name, err)
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	_, _ = b.WriteTo(w)
	return nil
}

// fragment writes one named template of parts.html: HTML for a page's
// script to insert.
func (p *pages) fragment(w http.ResponseWriter, name string, data any) error {
	var b bytes.Buffer
	if err := p.frags.ExecuteTemplate(&b, name, data); err != nil {
		return fmt.Errorf("render %s: %w", name, err)
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	_, _ = b.WriteTo(w)
	return nil
}

// fail writes a page that says what went wrong and what to do.
func (p *pages) fail(w http.ResponseWriter, status int, title, detail string) {
	var b bytes.Buffer
	if err := p.frags.ExecuteTemplate(&b, "layout.html", pageData{Title: title, Data: detail, Nav: "error"}); err != nil {
		http.Error(w, title+": "+detail, status)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	_, _ = b.WriteTo(w)
}

// markdown renders documents: CommonMark and GitHub tables, with raw HTML
// left out and dangerous link schemes dropped (goldmark's safe default).
var markdown = goldmark.New(goldmark.WithExtensions(extension.GFM))

func renderMarkdown(src string) (template.HTML, error) {
	var b bytes.Buffer
	if err := markdown.Convert([]byte(src), &b); err != nil {
		return "", err
	}
	return template.HTML(b.String()), nil // goldmark escapes text and omits raw HTML
}

// markdownText renders what agents write of an effort (notes, plans,
// logs) like documents, except that raw HTML is shown as the text it is
// instead of left out: "<T>" or a "<script>" an agent wrote stays
// visible, and never runs.
var markdownText = goldmark.New(goldmark.WithExtensions(extension.GFM),
	goldmark.WithRendererOptions(renderer.WithNodeRenderers(util.Prioritized(rawAsText{}, 100))))

func renderMarkdownText(src string) (template.HTML, error) {
	var b bytes.Buffer
	if err := markdownText.Convert([]byte(src), &b); err != nil {
		return "", err
	}
	return template.HTML(b.String()), nil // text and raw HTML escaped; link schemes checked
}

// rawAsText renders raw HTML, inline or a block, escaped. It takes
// precedence over goldmark's HTML renderer (priority 1000) for those two
// kinds of node only.
type rawAsText struct{}

func (rawAsText) RegisterFuncs(reg renderer.NodeRendererFuncRegisterer) {
	reg.Register(ast.KindRawHTML, func(w util.BufWriter, src []byte, n ast.Node, entering bool) (ast.WalkStatus, error) {
		if entering {
			segs := n.(*ast.RawHTML).Segments
			for i := range segs.Len() {
				seg := segs.At(i)
				_, _ = w.Write(util.EscapeHTML(seg.Value(src)))
			}
		}
		return ast.WalkSkipChildren, nil
	})
	reg.Register(ast.KindHTMLBlock, func(w util.BufWriter, src []byte, n ast.Node, entering bool) (ast.WalkStatus, error) {
		block := n.(*ast.HTMLBlock)
		if entering {
			_, _ = w.WriteString(`<pre class="raw">`)
			lines := block.Lines()
			for i := range lines.Len() {
				line := lines.At(i)
				_, _ = w.Write(util.EscapeHTML(line.Value(src)))
			}
			return ast.WalkContinue, nil
		}
		if block.HasClosure() {
			_, _ = w.Write(util.EscapeHTML(block.ClosureLine.Value(src)))
		}
		_, _ = w.WriteString("</pre>\n")
		return ast.WalkContinue, nil
	})
}

// fold splits a long message: the head shown, the rest behind a toggle.
func fold(s string) []string {
	if len(s) <= foldChars {
		return []string{s}
	}
	cut := strings.LastIndexAny(s[:foldChars/2], " \n")
	if cut < foldChars/4 {
		cut = foldChars / 2
	}
	for cut > 0 && !utf8Start(s[cut]) {
		cut--
	}
	return []string{s[:cut], s[cut:]}
}

func utf8Start(b byte) bool { return b&0xC0 != 0x80 }

func short(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8Start(s[n]) {
		n--
	}
	return s[:n] + "…"
}

func escapePath(p string) string {
	parts := strings.Split(p, "/")
	for i, s := range parts {
		parts[i] = url.PathEscape(s)
	}
	return strings.Join(parts, "/")
}

func ago(t time.Time) string {
	if t.IsZero() {
		return "never"
	}
	d := time.Since(t)
	switch {
	case d < 5*time.Second:
		return "just now"
	case d < time.Minute:
		return fmt.Sprintf("%ds ago", int(d.Seconds()))
	case d < time.Hour:
		return fmt.Sprintf("%dm ago", int(d.Minutes()))
	case d < 48*time.Hour:
		return fmt.Sprintf("%dh ago", int(d.Hours()))
	}
	return t.Local().Format("Jan 2 15:04")
}

func duration(ms int64) string {
	d := time.Duration(ms) * time.Millisecond
	switch {
	case d == 0:
		return "–"
	case d < time.Second:
		return fmt.Sprintf("%dms", ms)
	case d < time.Minute:
		return fmt.Sprintf("%.1fs", d.Seconds())
	}
	return d.Round(time.Second).String()
}

func usd(v any) string {
	switch x := v.(type) {
	case *float64:
		if x == nil {
			return "unpriced"
		}
		return usd(*x)
	case float64:
		if x > 0 && x < 1 {
			return fmt.Sprintf("$%.4f", x)
		}
		return fmt.Sprintf("$%.2f", x)
	}
	return fmt.Sprint(v)
}

func tokenCount(n int64) string { return axisValue(float64(n), false) }

func toFloat(v any) float64 {
	switch x := v.(type) {
	case int:
		return float64(x)
	case int64:
		return float64(x)
	case float64:
		return x
	}
	return 0
}

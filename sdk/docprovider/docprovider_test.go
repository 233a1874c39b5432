package docprovider_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/agent-worker/agent-worker/sdk"
	"github.com/agent-worker/agent-worker/sdk/docprovider"
)

func TestValidatePath(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("a", 197) + ".md"
	tests := map[string]struct {
		path string
		ok   bool
		hint string // part of the message that tells the user what to do
	}{
		"default":          {"notes.md", true, ""},
		"nested":           {"specs/api.md", true, ""},
		"all extensions":   {"a/b.c-d_e.yaml", true, ""},
		"txt":              {"log.txt", true, ""},
		"json":             {"data/2024.json", true, ""},
		"200 chars":        {long, true, ""},
		"8 parts":          {"a/b/c/d/e/f/g/h.md", true, ""},
		"201 chars":        {"a" + long, false, "at most 200"},
		"9 parts":          {"a/b/c/d/e/f/g/h/i.md", false, "at most 8"},
		"empty":            {"", false, "notes.md"},
		"parent":           {"../x.md", false, `".."`},
		"parent inside":    {"a/../../b.md", false, `".."`},
		"dot part":         {"./x.md", false, `"."`},
		"absolute":         {"/etc/passwd.md", false, "absolute"},
		"wrong extension":  {"x.exe", false, ".md, .txt, .json or .yaml"},
		"no extension":     {"README", false, ".md, .txt, .json or .yaml"},
		"extension only":   {".md", false, "hidden"},
		"hidden":           {".hidden.md", false, "hidden"},
		"hidden folder":    {"a/.git/x.md", false, "hidden"},
		"underscore start": {"_x.md", false, "letter or digit"},
		"double slash":     {"a//b.md", false, "empty part"},
		"trailing slash":   {"notes.md/", false, "empty part"},
		"space":            {"a b.md", false, "letters, digits"},
		"backslash":        {`a\b.md`, false, "letters, digits"},
		"non-ascii":        {"café.md", false, "letters, digits"},
		"upper extension":  {"notes.MD", false, ".md"},
		"nul":              {"a\x00.md", false, "letters, digits"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			err := docprovider.ValidatePath(tc.path)
			if tc.ok {
				if err != nil {
					t.Fatalf("ValidatePath(%q) = %v, want nil", tc.path, err)
				}
				return
			}
			if !errors.Is(err, sdk.ErrInvalid) {
				t.Fatalf("ValidatePath(%q) = %v, want sdk.ErrInvalid", tc.path, err)
			}
			if !strings.Contains(err.Error(), tc.hint) {
				t.Errorf("ValidatePath(%q) = %q, want it to mention %q", tc.path, err, tc.hint)
			}
		})
	}
}

func TestValidateScope(t *testing.T) {
	t.Parallel()
	tests := map[string]struct {
		scope docprovider.Scope
		bad   string // "" means valid; else the part the message must name
	}{
		"global main":  {docprovider.Scope{Workflow: "global", Tag: "main"}, ""},
		"dotted tag":   {docprovider.Scope{Workflow: "review", Tag: "pr-123.v2_x"}, ""},
		"64 chars":     {docprovider.Scope{Workflow: strings.Repeat("w", 64), Tag: "9"}, ""},
		"65 chars":     {docprovider.Scope{Workflow: strings.Repeat("w", 65), Tag: "main"}, "workflow"},
		"empty tag":    {docprovider.Scope{Workflow: "review"}, "tag"},
		"dotdot tag":   {docprovider.Scope{Workflow: "review", Tag: ".."}, "tag"},
		"slash":        {docprovider.Scope{Workflow: "a/b", Tag: "main"}, "workflow"},
		"leading dash": {docprovider.Scope{Workflow: "review", Tag: "-x"}, "tag"},
		"at sign":      {docprovider.Scope{Workflow: "a@b", Tag: "main"}, "workflow"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			err := docprovider.ValidateScope(tc.scope)
			if tc.bad == "" {
				if err != nil {
					t.Fatalf("ValidateScope(%+v) = %v, want nil", tc.scope, err)
				}
				return
			}
			if !errors.Is(err, sdk.ErrInvalid) || !strings.Contains(err.Error(), tc.bad+" name") {
				t.Errorf("ValidateScope(%+v) = %v, want sdk.ErrInvalid naming the %s", tc.scope, err, tc.bad)
			}
		})
	}
	if err := docprovider.ValidateRef(docprovider.Ref{Workflow: "w", Tag: "t", Path: "../x.md"}); !errors.Is(err, sdk.ErrInvalid) {
		t.Errorf("ValidateRef with a bad path = %v, want sdk.ErrInvalid", err)
	}
}

func TestCheckSize(t *testing.T) {
	t.Parallel()
	if err := docprovider.CheckSize("notes.md", docprovider.MaxDocumentBytes); err != nil {
		t.Errorf("CheckSize at the limit = %v, want nil", err)
	}
	err := docprovider.CheckSize("notes.md", docprovider.MaxDocumentBytes+1)
	if !errors.Is(err, sdk.ErrInvalid) || !strings.Contains(err.Error(), "1048576") {
		t.Errorf("CheckSize over the limit = %v, want sdk.ErrInvalid naming the limit", err)
	}
}

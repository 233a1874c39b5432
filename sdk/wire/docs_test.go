package wire

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agent-worker/agent-worker/sdk/docprovider"
)

func TestRefConversion(t *testing.T) {
	t.Parallel()
	for name, r := range map[string]docprovider.Ref{
		"zero": {},
		"full": {Workflow: "review", Tag: "pr-7", Path: "specs/api.md"},
	} {
		if got := RefFromProto(wire(t, RefToProto(r))); got != r {
			t.Errorf("%s: round trip = %+v, want %+v", name, got, r)
		}
	}
	if got := RefFromProto(nil); got != (docprovider.Ref{}) {
		t.Errorf("RefFromProto(nil) = %+v", got)
	}
	for name, s := range map[string]docprovider.Scope{"zero": {}, "full": {Workflow: "review", Tag: "main"}} {
		if got := ScopeFromProto(wire(t, ScopeToProto(s))); got != s {
			t.Errorf("%s: scope round trip = %+v, want %+v", name, got, s)
		}
	}
	if got := ScopeFromProto(nil); got != (docprovider.Scope{}) {
		t.Errorf("ScopeFromProto(nil) = %+v", got)
	}
}

func TestInfosConversion(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 11, 22, 12, 30, 0, 123456789, time.FixedZone("CET", 3600))
	tests := map[string]struct {
		in, want []docprovider.Info
	}{
		"nil":   {nil, []docprovider.Info{}},
		"empty": {[]docprovider.Info{}, []docprovider.Info{}},
		"zero":  {[]docprovider.Info{{}}, []docprovider.Info{{}}},
		"full": {
			[]docprovider.Info{{Path: "a.md", Size: 7, UpdatedAt: at}, {Path: "b/c.txt", Size: 1 << 20}},
			[]docprovider.Info{{Path: "a.md", Size: 7, UpdatedAt: at}, {Path: "b/c.txt", Size: 1 << 20}},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got := InfosFromProto(wire(t, InfosToProto(tc.in)))
			if got == nil {
				t.Fatal("InfosFromProto returned nil, want a non-nil slice")
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("round trip (-want +got):\n%s", diff)
			}
		})
	}
	if got := InfosFromProto(nil); got == nil || len(got) != 0 {
		t.Errorf("InfosFromProto(nil) = %#v, want an empty non-nil slice", got)
	}
}

package docprovider

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/proto"
)

// wire sends m through proto encoding, as gRPC does.
func wire[M proto.Message](t *testing.T, m M) M {
	t.Helper()
	b, err := proto.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	out := m.ProtoReflect().New().Interface().(M)
	if err := proto.Unmarshal(b, out); err != nil {
		t.Fatal(err)
	}
	return out
}

func TestRefConversion(t *testing.T) {
	t.Parallel()
	for name, r := range map[string]Ref{
		"zero": {},
		"full": {Workflow: "review", Tag: "pr-7", Path: "specs/api.md"},
	} {
		if got := refFromProto(wire(t, refToProto(r))); got != r {
			t.Errorf("%s: round trip = %+v, want %+v", name, got, r)
		}
	}
	if got := refFromProto(nil); got != (Ref{}) {
		t.Errorf("refFromProto(nil) = %+v", got)
	}
	for name, s := range map[string]Scope{"zero": {}, "full": {Workflow: "review", Tag: "main"}} {
		if got := scopeFromProto(wire(t, scopeToProto(s))); got != s {
			t.Errorf("%s: scope round trip = %+v, want %+v", name, got, s)
		}
	}
	if got := scopeFromProto(nil); got != (Scope{}) {
		t.Errorf("scopeFromProto(nil) = %+v", got)
	}
}

func TestInfosConversion(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 11, 22, 12, 30, 0, 123456789, time.FixedZone("CET", 3600))
	tests := map[string]struct {
		in, want []Info
	}{
		"nil":   {nil, []Info{}},
		"empty": {[]Info{}, []Info{}},
		"zero":  {[]Info{{}}, []Info{{}}},
		"full": {
			[]Info{{Path: "a.md", Size: 7, UpdatedAt: at}, {Path: "b/c.txt", Size: 1 << 20}},
			[]Info{{Path: "a.md", Size: 7, UpdatedAt: at}, {Path: "b/c.txt", Size: 1 << 20}},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got := infosFromProto(wire(t, infosToProto(tc.in)))
			if got == nil {
				t.Fatal("infosFromProto returned nil, want a non-nil slice")
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("round trip (-want +got):\n%s", diff)
			}
		})
	}
	if got := infosFromProto(nil); got == nil || len(got) != 0 {
		t.Errorf("infosFromProto(nil) = %#v, want an empty non-nil slice", got)
	}
}

package plugin

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/proto"
)

func TestInfoConversion(t *testing.T) {
	t.Parallel()
	tests := map[string]Info{
		"zero": {},
		"full": {Name: "claude", Kind: KindBackend, Version: "1.2.3", APIVersions: []string{"v1", "v2"}, Capabilities: []string{"resume", "usage"}, Status: "claude 2.1.197 (Claude Code) at /usr/bin/claude"},
	}
	for name, in := range tests {
		t.Run(name, func(t *testing.T) {
			b, err := proto.Marshal(infoToProto(in))
			if err != nil {
				t.Fatal(err)
			}
			var resp = infoToProto(Info{})
			if err := proto.Unmarshal(b, resp); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(in, infoFromProto(resp)); diff != "" {
				t.Errorf("round trip (-want +got):\n%s", diff)
			}
		})
	}
	if diff := cmp.Diff(Info{}, infoFromProto(nil)); diff != "" {
		t.Errorf("infoFromProto(nil) (-want +got):\n%s", diff)
	}
}

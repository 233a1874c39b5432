package plugins

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParseSpares(t *testing.T) {
	t.Parallel()
	tests := map[string]struct {
		in      string
		want    Spares
		wantErr string
	}{
		"empty is the default": {in: "", want: Spares{Default: 1}},
		"one count":            {in: "3", want: Spares{Default: 3}},
		"off":                  {in: "0", want: Spares{}},
		"per backend":          {in: "sdk=0,mock=2", want: Spares{Default: 1, Backends: map[string]int{"sdk": 0, "mock": 2}}},
		"both, spaced":         {in: " 2 , sdk = 0 ", want: Spares{Default: 2, Backends: map[string]int{"sdk": 0}}},
		"negative":             {in: "-1", wantErr: `"-1" is not a count from 0 to 16`},
		"too many":             {in: "mock=99", wantErr: `"99" is not a count from 0 to 16`},
		"not a number":         {in: "sdk=many", wantErr: "write N, or backend=N"},
		"bad backend name":     {in: "a b=1", wantErr: "backend"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got, err := ParseSpares(tc.in)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("ParseSpares(%q) = %+v, %v; want an error saying %q", tc.in, got, err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("ParseSpares(%q) (-want +got):\n%s", tc.in, diff)
			}
			again, err := ParseSpares(got.String())
			if err != nil || !cmp.Equal(again, got) {
				t.Errorf("String %q does not read back: %+v, %v", got.String(), again, err)
			}
			if got.For("sdk") != tc.want.For("sdk") || got.For("other") != tc.want.Default {
				t.Errorf("For: sdk %d, other %d", got.For("sdk"), got.For("other"))
			}
		})
	}
}

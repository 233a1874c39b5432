package backend

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestRunLimitsJSON: limits survive the store's JSON column in the
// agent's config, and the cgroup values come out as the kernel takes them.
func TestRunLimitsJSON(t *testing.T) {
	t.Parallel()
	tests := map[string]struct {
		in     string
		want   RunLimits
		cpuMax string
	}{
		"all":     {`{"pids": 64, "memory": "512M", "cpu": 1.5}`, RunLimits{Pids: 64, Memory: 512 << 20, CPU: 1.5}, "150000 100000"},
		"strings": {`{"pids": "64", "memory": 67108864, "cpu": "0.5"}`, RunLimits{Pids: 64, Memory: 64 << 20, CPU: 0.5}, "50000 100000"},
		"max":     {`{"pids": "max", "memory": "max", "cpu": "max"}`, RunLimits{Pids: Unlimited, Memory: Unlimited, CPU: Unlimited}, "max 100000"},
		"empty":   {`{}`, RunLimits{}, "max 100000"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			c, err := ParseAgentConfig([]byte(`{"limits": ` + tc.in + `, "max_steps": 3}`))
			if err != nil {
				t.Fatal(err)
			}
			if c.Limits == nil || *c.Limits != tc.want {
				t.Fatalf("limits = %+v, want %+v", c.Limits, tc.want)
			}
			if got := CPUMax(c.Limits.CPU); got != tc.cpuMax {
				t.Errorf("cpu.max = %q, want %q", got, tc.cpuMax)
			}
			b, err := json.Marshal(c)
			if err != nil {
				t.Fatal(err)
			}
			back, err := ParseAgentConfig(b)
			if err != nil {
				t.Fatalf("read back %s: %v", b, err)
			}
			if diff := cmp.Diff(c, back); diff != "" {
				t.Errorf("round trip through %s (-want +got):\n%s", b, diff)
			}
		})
	}
}

// TestRunLimitsErrors: a bad limit from the API or the daemon's flag
// says what to write.
func TestRunLimitsErrors(t *testing.T) {
	t.Parallel()
	tests := map[string]struct{ config, flag, want string }{
		"unknown key":  {config: `{"limits": {"disk": "1G"}}`, flag: "disk=1G", want: `unknown limit "disk": the limits are pids, memory and cpu`},
		"bad memory":   {config: `{"limits": {"memory": "2Q"}}`, flag: "memory=2Q", want: `memory "2Q" is not valid: write a size such as 512M or 2G`},
		"few pids":     {config: `{"limits": {"pids": 3}}`, flag: "pids=3", want: "pids 3 is too few"},
		"negative cpu": {config: `{"limits": {"cpu": -1}}`, flag: "cpu=-1", want: `cpu "-1" is not valid`},
		"not a map":    {config: `{"limits": 5}`, flag: "pids", want: "limits"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			if _, err := ParseAgentConfig([]byte(tc.config)); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("config %s: error %v, want it to say %q", tc.config, err, tc.want)
			}
			want := tc.want
			if name == "not a map" {
				want = "is not key=value"
			}
			if _, err := ParseRunLimits(tc.flag); err == nil || !strings.Contains(err.Error(), want) {
				t.Errorf("flag %s: error %v, want it to say %q", tc.flag, err, want)
			}
		})
	}
	l, err := ParseRunLimits("pids=4096, memory=max,cpu=2")
	if err != nil || l != (RunLimits{Pids: 4096, Memory: Unlimited, CPU: 2}) {
		t.Errorf("ParseRunLimits = %+v, %v", l, err)
	}
	if got := l.Over(RunLimits{Pids: 1, CPU: 1}); got != l {
		t.Errorf("set limits must win over defaults: %+v", got)
	}
	if got := (RunLimits{Memory: 64 << 20}).Over(l).String(); got != "pids 4096, memory 64M, cpu 2" {
		t.Errorf("String = %q", got)
	}
}

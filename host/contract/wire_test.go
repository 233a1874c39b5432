package contract

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
)

var update = flag.Bool("update", false, "rewrite testdata/wire.golden from the types")

// The JSON of every wire type, empty and with each field set, is what
// clients parse: a renamed field, a changed tag or a lost omitempty
// changes testdata/wire.golden and fails here. The file was first made
// from host/api's types before they moved into the contract, byte for
// byte the same. Refresh it with -update only for a change meant to
// reach the wire.
func TestWireShapesAreUnchanged(t *testing.T) {
	got, err := wireShapes(map[string]any{
		"AgentStateEvent":  AgentStateEvent{},
		"AnswerRequest":    AnswerRequest{},
		"AttachedSession":  AttachedSession{},
		"Backup":           Backup{},
		"BackupRequest":    BackupRequest{},
		"Budget":           Budget{},
		"BudgetRequest":    BudgetRequest{},
		"Cancelled":        Cancelled{},
		"Cluster":          Cluster{},
		"ClusterMember":    ClusterMember{},
		"ConsoleLogin":     ConsoleLogin{},
		"Counts":           Counts{},
		"DecideRequest":    DecideRequest{},
		"DequeueRequest":   DequeueRequest{},
		"DiscardRequest":   DiscardRequest{},
		"Disk":             Disk{},
		"Divergence":       Divergence{},
		"Doctor":           Doctor{},
		"Document":         Document{},
		"DocumentWrite":    DocumentWrite{},
		"Fork":             Fork{},
		"ForkWorkflow":     ForkWorkflow{},
		"HookCall":         HookCall{},
		"HookResult":       HookResult{},
		"Identity":         Identity{},
		"IntegrateRequest": IntegrateRequest{},
		"ListenFallback":   ListenFallback{},
		"MCPConfig":        MCPConfig{},
		"Member":           Member{},
		"Notification":     Notification{},
		"NotificationBody": NotificationBody{},
		"NotificationList": NotificationList{},
		"NotifyTestResult": NotifyTestResult{},
		"PendingEdit":      PendingEdit{},
		"Plugin":           Plugin{},
		"PluginList":       PluginList{},
		"ProcessControl":   ProcessControl{},
		"Progress":         Progress{},
		"PromptEvent":      PromptEvent{},
		"PromptMessage":    PromptMessage{},
		"Reset":            Reset{},
		"Resource":         Resource{},
		"Run":              Run{},
		"RunChunk":         RunChunk{},
		"Replay":           Replay{},
		"RunDetail":        RunDetail{},
		"RunEvent":         RunEvent{},
		"RunEventInfo":     RunEventInfo{},
		"RunList":          RunList{},
		"RunRequest":       RunRequest{},
		"RunTool":          RunTool{},
		"SandboxInfo":      SandboxInfo{},
		"ScheduleRequest":  ScheduleRequest{},
		"SearchHit":        SearchHit{},
		"SearchResult":     SearchResult{},
		"SendRequest":      SendRequest{},
		"SpareStats":       SpareStats{},
		"Spend":            Spend{},
		"StartWorkflow":    StartWorkflow{},
		"Status":           Status{},
		"StoreHealth":      StoreHealth{},
		"TLSInfo":          TLSInfo{},
		"TaskCreate":       TaskCreate{},
		"TaskCancel":       TaskCancel{},
		"TaskEvent":        TaskEvent{},
		"ToolEvent":        ToolEvent{},
		"Usage":            Usage{},
		"Worker":           Worker{},
		"Workflow":         Workflow{},
		"WorkflowEvent":    WorkflowEvent{},
		"WorkflowList":     WorkflowList{},
	})
	if err != nil {
		t.Fatal(err)
	}
	golden := filepath.Join("testdata", "wire.golden")
	if *update {
		if err := os.WriteFile(golden, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (make it with go test -run TestWireShapesAreUnchanged -update)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("the JSON of the wire types changed; if clients should see the change, refresh with -update:\n%s", lineDiff(string(want), string(got)))
	}
}

// Every struct type of the contract is in the golden file, so a new one
// cannot skip it.
func TestEveryWireTypeIsInTheGoldenFile(t *testing.T) {
	want, err := os.ReadFile(filepath.Join("testdata", "wire.golden"))
	if err != nil {
		t.Fatal(err)
	}
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	structType := regexp.MustCompile(`(?m)^type (\w+) struct \{$`)
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range structType.FindAllSubmatch(src, -1) {
			name := string(m[1])
			if name != "Error" && !bytes.Contains(append([]byte("\n"), want...), []byte("\n"+name+"\nzero: ")) {
				t.Errorf("%s (%s) is not in testdata/wire.golden: add it to TestWireShapesAreUnchanged and run it with -update", name, f)
			}
		}
	}
}

// lineDiff lists the lines of got that differ from want.
func lineDiff(want, got string) string {
	w, g := bytes.Split([]byte(want), []byte("\n")), bytes.Split([]byte(got), []byte("\n"))
	var out bytes.Buffer
	for i := range max(len(w), len(g)) {
		var a, b []byte
		if i < len(w) {
			a = w[i]
		}
		if i < len(g) {
			b = g[i]
		}
		if !bytes.Equal(a, b) {
			fmt.Fprintf(&out, "line %d\n- %s\n+ %s\n", i+1, a, b)
		}
	}
	return out.String()
}

// fill sets every field of v, recursively, to a value that is not the
// zero value, so that each field and its tag show in the JSON.
func fill(v reflect.Value, depth int) {
	if v.Type() == reflect.TypeOf(json.RawMessage(nil)) {
		v.SetBytes([]byte(`{"k":1}`))
		return
	}
	if v.Type() == reflect.TypeOf(time.Time{}) {
		v.Set(reflect.ValueOf(time.Date(2025, 1, 2, 3, 4, 5, 6, time.UTC)))
		return
	}
	switch v.Kind() {
	case reflect.String:
		v.SetString("s")
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		v.SetInt(7)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		v.SetUint(7)
	case reflect.Float32, reflect.Float64:
		v.SetFloat(1.5)
	case reflect.Pointer:
		if depth < 4 {
			v.Set(reflect.New(v.Type().Elem()))
			fill(v.Elem(), depth+1)
		}
	case reflect.Slice:
		if depth < 4 {
			v.Set(reflect.MakeSlice(v.Type(), 1, 1))
			fill(v.Index(0), depth+1)
		}
	case reflect.Map:
		m := reflect.MakeMap(v.Type())
		e := reflect.New(v.Type().Elem()).Elem()
		if e.Kind() == reflect.Interface {
			e.Set(reflect.ValueOf("v"))
		} else {
			fill(e, depth+1)
		}
		m.SetMapIndex(reflect.ValueOf("k"), e)
		v.Set(m)
	case reflect.Struct:
		for i := 0; i < v.NumField(); i++ {
			if v.Type().Field(i).IsExported() {
				fill(v.Field(i), depth+1)
			}
		}
	}
}

// wireShapes is each type's JSON, zero and filled, one type a block.
func wireShapes(values map[string]any) ([]byte, error) {
	var out bytes.Buffer
	for _, name := range slices.Sorted(maps.Keys(values)) {
		zero, err := json.Marshal(values[name])
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		full := reflect.New(reflect.TypeOf(values[name]))
		fill(full.Elem(), 0)
		b, err := json.Marshal(full.Interface())
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		fmt.Fprintf(&out, "%s\nzero: %s\nfull: %s\n\n", name, zero, b)
	}
	return out.Bytes(), nil
}

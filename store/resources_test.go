package store

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/agent-worker/agent-worker/host/contract"
)

func TestResources(t *testing.T) {
	t.Parallel()
	db := openTest(t)
	ctx := t.Context()
	team := Scope{"team", "t"}
	createTeam(t, db, team, "alice")

	for name, in := range map[string]NewResource{
		"markdown":        {Type: "markdown", Content: "# Plan\n"},
		"json":            {Type: "json", Content: `{"a":[1,2]}`},
		"text":            {Type: "text", Content: "plain"},
		"diff":            {Type: "diff", Content: "--- a\n+++ b\n"},
		"default is text": {Content: "untyped"},
	} {
		in.Workflow, in.Tag, in.CreatedBy = team.Workflow, team.Tag, "alice"
		created, err := db.CreateResource(ctx, in)
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		want := Resource{Workflow: "team", Tag: "t", Type: in.Type, Content: in.Content, CreatedBy: "alice"}
		if want.Type == "" {
			want.Type = "text"
		}
		if diff := cmp.Diff(want, created, cmpopts.IgnoreFields(Resource{}, "ID", "CreatedAt")); diff != "" {
			t.Errorf("%s: CreateResource (-want +got):\n%s", name, diff)
		}
		got, err := db.GetResource(ctx, team, created.ID)
		if err != nil {
			t.Errorf("%s: GetResource: %v", name, err)
		}
		if diff := cmp.Diff(created, got); diff != "" {
			t.Errorf("%s: GetResource (-created +got):\n%s", name, diff)
		}
	}

	r, err := db.CreateResource(ctx, NewResource{Workflow: "team", Tag: "t", Content: "mine"})
	if err != nil {
		t.Fatal(err)
	}
	for name, tc := range map[string]struct {
		call     func() error
		code     contract.Code
		contains string
	}{
		"unknown type": {func() error {
			_, err := db.CreateResource(ctx, NewResource{Workflow: "team", Tag: "t", Type: "pdf", Content: "x"})
			return err
		}, contract.CodeInvalid, `"pdf"`},
		"invalid json": {func() error {
			_, err := db.CreateResource(ctx, NewResource{Workflow: "team", Tag: "t", Type: "json", Content: "{"})
			return err
		}, contract.CodeInvalid, "JSON"},
		"empty": {func() error {
			_, err := db.CreateResource(ctx, NewResource{Workflow: "team", Tag: "t"})
			return err
		}, contract.CodeInvalid, "empty"},
		"too large": {func() error {
			_, err := db.CreateResource(ctx, NewResource{Workflow: "team", Tag: "t", Content: strings.Repeat("x", MaxResourceBytes+1)})
			return err
		}, contract.CodeInvalid, "10 MiB"},
		"other tag": {func() error {
			_, err := db.GetResource(ctx, Scope{"team", "u"}, r.ID)
			return err
		}, contract.CodeNotFound, "resource " + r.ID + " not found in @team:u"},
		"other workflow": {func() error {
			_, err := db.GetResource(ctx, Scope{"other", "t"}, r.ID)
			return err
		}, contract.CodeNotFound, "not found"},
		"unknown id": {func() error {
			_, err := db.GetResource(ctx, team, "res_0123456789abcdef")
			return err
		}, contract.CodeNotFound, "not found in @team:t"},
		"bad id": {func() error {
			_, err := db.GetResource(ctx, team, "res_XYZ")
			return err
		}, contract.CodeInvalid, "not a resource id"},
		"upper-case id": {func() error {
			_, err := db.GetResource(ctx, team, strings.ToUpper(r.ID))
			return err
		}, contract.CodeInvalid, "not a resource id"},
	} {
		err := tc.call()
		if contract.ErrorCode(err) != tc.code || !strings.Contains(err.Error(), tc.contains) {
			t.Errorf("%s: err = %v (code %q), want code %q mentioning %q", name, err, contract.ErrorCode(err), tc.code, tc.contains)
		}
	}
	if n := queryInt(t, db, `SELECT count(*) FROM resources`); n != 6 {
		t.Errorf("resources has %d rows, want the 6 valid ones", n)
	}
}

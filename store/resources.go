package store

import (
	"context"
	"regexp"

	"github.com/agent-worker/agent-worker/host/contract"
)

// MaxResourceBytes caps one resource: resources carry long messages and
// tool output, not files, and every read loads one whole into memory.
const MaxResourceBytes = 10 << 20

// resourceID is the shape newID gives resource ids; anything else is a typo
// or a forgery, worth a clearer answer than "not found".
var resourceID = regexp.MustCompile(`^res_[0-9a-f]{16}$`)

// CreateResource stores content for resource_create and returns it with its
// new id, which agents then pass around instead of the content.
func (db *DB) CreateResource(ctx context.Context, r NewResource) (Resource, error) {
	switch {
	case r.Workflow == "" || r.Tag == "":
		return Resource{}, contract.Errorf(contract.CodeInvalid, "resource needs a workflow and tag")
	case r.Content == "":
		return Resource{}, contract.Errorf(contract.CodeInvalid, "resource content is empty")
	case len(r.Content) > MaxResourceBytes:
		return Resource{}, contract.Errorf(contract.CodeInvalid, "resource content is %d bytes; the limit is %d (10 MiB)", len(r.Content), MaxResourceBytes)
	}
	var out Resource
	err := db.write(ctx, func(conn querier) (err error) {
		out, err = insertResource(conn, r, db.nowMs())
		return err
	})
	return out, err
}

// GetResource returns a resource of scope s. A resource of another
// workflow:tag is reported as not found, so ids never leak across teams.
func (db *DB) GetResource(ctx context.Context, s Scope, id string) (Resource, error) {
	if !resourceID.MatchString(id) {
		return Resource{}, contract.Errorf(contract.CodeInvalid, "%q is not a resource id: ids look like res_ followed by 16 hex digits", id)
	}
	var r Resource
	found := false
	err := db.read(ctx, func(conn querier) error {
		return conn.execute(`SELECT id, workflow, tag, type, content, created_by, created_at
			FROM resources WHERE id = ? AND workflow = ? AND tag = ?`,
			&execOptions{Args: []any{id, s.Workflow, s.Tag}, ResultFunc: func(st row) error {
				r = Resource{ID: st.ColumnText(0), Workflow: st.ColumnText(1), Tag: st.ColumnText(2),
					Type: st.ColumnText(3), Content: st.ColumnText(4), CreatedBy: st.ColumnText(5),
					CreatedAt: fromMs(st.ColumnInt64(6))}
				found = true
				return nil
			}})
	})
	if err == nil && !found {
		err = contract.Errorf(contract.CodeNotFound, "resource %s not found in %s", id, s)
	}
	return r, err
}

package tools

import (
	"fmt"
	"slices"
	"strings"
)

// MaxRoleLen bounds a role's name.
const MaxRoleLen = 40

// CheckRole checks a role's name as agents' roles (workflow files, `new
// --role`, agent_spawn) and tasks' role (task_create, `tasks add --role`)
// spell it: a lowercase letter, then lowercase letters, digits, - or _,
// at most MaxRoleLen in all. One check, so a role a file accepts is one a
// task can ask for.
func CheckRole(role string) error {
	if role == "" {
		return fmt.Errorf("a role is empty: name it, e.g. reviewer")
	}
	if len(role) > MaxRoleLen {
		return fmt.Errorf("role %q is %d characters; the limit is %d", role, len(role), MaxRoleLen)
	}
	for i, r := range role {
		switch {
		case r >= 'a' && r <= 'z':
		case i > 0 && (r >= '0' && r <= '9' || r == '-' || r == '_'):
		default:
			return fmt.Errorf("role %q: use a lowercase letter first, then lowercase letters, digits, - or _ (e.g. reviewer, backend-dev)", role)
		}
	}
	return nil
}

// CleanRoles checks every role and returns them sorted without repeats;
// nil for none.
func CleanRoles(roles []string) ([]string, error) {
	var out []string
	for _, r := range roles {
		r = strings.TrimSpace(r)
		if err := CheckRole(r); err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	slices.Sort(out)
	return slices.Compact(out), nil
}

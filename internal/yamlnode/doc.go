// Package yamlnode reads the nodes of a parsed go.yaml.in/yaml/v3 document
// the one way every YAML reader of agent-worker does: aliases followed,
// null and absent alike, and a mapping's keys listed in file order with
// duplicate keys and merge keys (<<) reported, which the YAML library would
// otherwise resolve silently. It is for the workflow parser (workflow), the
// skill parser (workflow/skill), the daemon's --config file
// (internal/configfile) and the mock backend's scripts (plugins/mock).
//
// A caller reports problems its own way: Entries takes the caller's Report
// func and the number of lines its file holds before the YAML document,
// so a message is placed where the user sees it (a SKILL.md's front matter
// begins on its second line).
//
// The package imports only the standard library and the YAML library, so a
// plugin may use it as well as the daemon.
package yamlnode

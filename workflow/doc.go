// Package workflow reads workflow YAML: types, parsing, validation with
// file:line, ${{ }} interpolation, params and setup. The daemon parses
// workflows; the CLI only sends a file's path or content.
package workflow

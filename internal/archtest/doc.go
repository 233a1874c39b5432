// Package archtest holds the tests of the repository's shape, for its
// maintainers: which of the daemon's packages may import which (the
// kernel's layering), that plugin-side code reaches no daemon internals,
// that every package of both modules (the daemon's and sdk/) has a doc
// comment, and that only the SDK is called sdk. It has no code: the tests
// read the packages with `go list` from the repository's root and from
// sdk/, a module of its own, which tests inside sdk/ could not see past.
package archtest

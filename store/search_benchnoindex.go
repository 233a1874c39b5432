//go:build benchnoindex

package store

// A daemon built with -tags benchnoindex leaves messages unindexed, so
// that agent-worker-bench can measure what search indexing costs a
// channel_send in a real daemon. No release is built with it.
func init() { benchNoMessageIndex = true }

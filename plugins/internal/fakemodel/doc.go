// Package fakemodel is a scripted model server for tests: it speaks enough
// of the Anthropic Messages API and the OpenAI Chat Completions and
// Responses APIs (streaming and not) for the sdk backend and the real
// claude and codex CLIs to run fully offline. Each request takes the next
// scripted Turn; every request is recorded for assertions.
package fakemodel

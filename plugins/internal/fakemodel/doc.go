// Package fakemodel is a scripted model server for tests: it speaks enough
// of the Anthropic Messages API, the OpenAI Chat Completions and Responses
// APIs and the Gemini API (streaming and not) for the sdk backend and the
// real claude, codex and gemini CLIs to run fully offline. Each request
// takes the next scripted Turn; every request is recorded for assertions.
package fakemodel

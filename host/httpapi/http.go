package httpapi

import (
	"bytes"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/pprof"
	"reflect"
	"runtime/debug"
	"strings"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/agent-worker/agent-worker/host/api"
)

// MaxBodyBytes bounds every request body; agent specs and messages are small
// and large content goes through resources.
const MaxBodyBytes = 1 << 20

// routes is the whole HTTP API. Every route sits behind the bearer check
// but /mcp (agent tokens), /hooks (signatures), /console (sessions) and
// /identity (public: it says only who listens here).
func (h *Server) routes(log hclog.Logger) http.Handler {
	mux := http.NewServeMux()
	handle := func(pattern string, fn handlerFunc) { mux.Handle(pattern, apiHandler{fn, log}) }

	handle("GET /health", h.handleHealth)
	handle("GET /doctor", h.handleDoctor)
	handle("POST /shutdown", h.handleShutdown)
	handle("POST /backup", h.handleBackup)
	handle("GET /agents", h.handleListAgents)
	handle("POST /agents", h.handleCreateAgent)
	handle("GET /agents/{target}", h.handleGetAgent)
	handle("DELETE /agents/{target}", h.handleDeleteAgent)
	handle("POST /agents/{target}/mcp-config", h.handleMCPConfig)
	handle("POST /agents/{target}/hook", h.handleClaudeHook)
	handle("GET /sessions", h.handleLiveSessions)
	handle("GET /sessions/continue", h.handleSessionContinue)
	handle("POST /agents/{target}/gate", h.handleSessionGate)
	handle("GET /agents/{target}/statusline", h.handleStatusLine)
	handle("POST /agents/{target}/resume", h.handleResume)
	handle("POST /agents/{target}/pause", h.handlePause)
	handle("POST /agents/{target}/cancel", h.handleCancelAgent)
	handle("POST /agents/{target}/reset", h.handleReset)
	handle("PUT /agents/{target}/schedule", h.handleSetSchedule)
	handle("DELETE /agents/{target}/schedule", h.handleClearSchedule)
	handle("POST /send", h.handleSend)
	handle("GET /peek", h.handlePeek)
	handle("GET /events", h.handleEvents)
	handle("GET /docs/{wf}/{tag}", h.handleDocList)
	handle("GET /docs/{wf}/{tag}/{path...}", h.handleDocRead)
	handle("PUT /docs/{wf}/{tag}/{path...}", h.handleDocWrite)
	handle("POST /docs/{wf}/{tag}/{path...}", h.handleDocAppend)
	handle("GET /proposals/{wf}/{tag}", h.handleProposals)
	handle("GET /search/{wf}/{tag}", h.handleSearch)
	handle("GET /questions", h.handleQuestions)
	handle("POST /questions/{id}/answer", h.handleAnswerQuestion)
	handle("POST /questions/{id}/approve", h.handleApprove)
	handle("POST /questions/{id}/deny", h.handleDeny)
	handle("GET /notifications", h.handleNotifications)
	handle("POST /notify/test/{wf}/{tag}", h.handleNotifyTest)
	handle("GET /tasks", h.handleListTasks)
	handle("POST /tasks", h.handleCreateTask)
	handle("GET /tasks/{id}", h.handleGetTask)
	handle("POST /tasks/{id}/cancel", h.handleCancelTask)
	handle("PUT /budgets/{target}", h.handleSetBudget)
	handle("DELETE /budgets/{target}", h.handleClearBudget)
	handle("POST /run", h.handleRun)
	handle("POST /serve", h.handleServe)
	handle("GET /plugins", h.handlePlugins)
	handle("GET /runs", h.handleListRuns)
	handle("GET /runs/{id}", h.handleGetRun)
	handle("POST /runs/{id}/cancel", h.handleCancelRun)
	handle("POST /runs/{id}/replay", h.handleReplayRun)
	handle("GET /runs/{id}/events", h.handleRunEvents)
	handle("GET /workflows", h.handleListWorkflows)
	handle("GET /workflows/{name}/{tag}", h.handleGetWorkflow)
	handle("POST /workflows", h.handleStartWorkflow)
	handle("DELETE /workflows/{name}/{tag}", h.handleStopWorkflow)
	handle("POST /workflows/{name}/{tag}/pause", h.handlePauseWorkflow)
	handle("POST /workflows/{name}/{tag}/resume", h.handleResumeWorkflow)
	handle("POST /workflows/{name}/{tag}/accept", h.handleAcceptWorkflow)
	handle("POST /workflows/{name}/{tag}/fork", h.handleForkWorkflow)
	handle("GET /resources/{wf}/{tag}/{id}", h.handleResource)
	handle("POST /console/codes", h.handleConsoleCode)
	handle("GET /worktrees", h.handleWorktrees)
	handle("POST /worktrees/{agent}/integrate", h.handleIntegrate)
	handle("POST /worktrees/{agent}/discard", h.handleDiscard)
	handle("GET /worktrees/queue", h.handleQueue)
	handle("GET /worktrees/queue/{id}", h.handleQueueEntry)
	handle("GET /skills", h.handleSkills)
	handle("GET /skills/{name}", h.handleSkill)
	handle("GET /efforts", h.handleEfforts)
	handle("POST /efforts", h.handleEffortStart)
	handle("POST /efforts/next", h.handleEffortNext)
	handle("POST /efforts/log", h.handleEffortLog)
	handle("POST /efforts/finish", h.handleEffortFinish)
	handle("GET /efforts/{id}", h.handleEffortShow)
	handle("GET /efforts/{id}/artifacts/{name}", h.handleEffortArtifact)
	handle("DELETE /worktrees/queue/{id}", h.handleDequeue)
	mux.Handle("GET /metrics", h.metrics)
	// Profiles of the running daemon (go tool pprof), behind the token like
	// everything else: a profile shows what the daemon is doing.
	mux.HandleFunc("GET /debug/pprof/", pprof.Index)
	mux.HandleFunc("GET /debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("GET /debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("GET /debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("GET /debug/pprof/trace", pprof.Trace)
	handle("/", func(w http.ResponseWriter, r *http.Request) error {
		return api.Errorf(api.CodeNotFound, "no route %s %s: see `agent-worker --help` for what the daemon serves", r.Method, r.URL.Path)
	})
	// /mcp authenticates agents with their own tokens, not the daemon's.
	top := http.NewServeMux()
	top.Handle("/mcp", h.mcp)
	top.Handle("/mcp/gate", h.mcp) // the plugins' gate (tools.GatePath), authenticated as /mcp
	// Webhooks are authenticated by their signature (host/triggers).
	top.Handle("POST /hooks/{workflow}/{name}", apiHandler{h.handleHook, log})
	// Probes for a service manager or a load balancer, which hold no
	// token: they answer a status and nothing else (probe.go).
	top.HandleFunc("GET /healthz", h.handleLiveness)
	top.HandleFunc("GET /readyz", h.handleReadiness)
	// Who listens here, for a daemon that finds this address taken.
	top.Handle("GET /identity", apiHandler{h.handleIdentity, log})
	top.Handle("/", h.requireToken(mux))
	// The console authenticates browsers with its own session cookie and
	// calls the routes above in process; minting its login codes takes
	// the token.
	if h.console != nil {
		top.Handle("/console/", h.console.Handler(mux))
		top.Handle("POST /console/codes", h.requireToken(mux))
	}
	return logRequests(log, sameOrigin(h.info, top))
}

// handlerFunc is an HTTP handler that reports failure by returning an error,
// so every route answers errors in the same JSON shape.
type handlerFunc func(w http.ResponseWriter, r *http.Request) error

type apiHandler struct {
	fn  handlerFunc
	log hclog.Logger
}

func (a apiHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	defer func() {
		if p := recover(); p != nil {
			a.log.Error("handler panic", "method", r.Method, "path", r.URL.Path, "panic", p, "stack", string(debug.Stack()))
			writeError(w, a.log, r, fmt.Errorf("panic: %v", p))
		}
	}()
	if err := a.fn(w, r); err != nil {
		writeError(w, a.log, r, err)
	}
}

// toAPIError classifies err for the wire. Anything unclassified is an
// internal error whose details stay in the daemon log.
func toAPIError(err error) *api.Error {
	var ae *api.Error
	var tooBig *http.MaxBytesError
	switch {
	case errors.As(err, &ae):
		return ae
	case errors.As(err, &tooBig):
		return api.Errorf(api.CodeTooLarge, "request body is larger than %d bytes", tooBig.Limit)
	}
	return nil
}

func writeError(w http.ResponseWriter, log hclog.Logger, r *http.Request, err error) {
	ae := toAPIError(err)
	if ae == nil && r.Context().Err() != nil {
		// The client left (a browser navigating away, Ctrl-C): what failed
		// is the read it abandoned, not the daemon, and nobody waits for
		// the answer.
		log.Debug("request abandoned by the client", "method", r.Method, "path", r.URL.Path, "error", err)
		return
	}
	if ae == nil {
		log.Error("request failed", "method", r.Method, "path", r.URL.Path, "error", err)
		ae = api.Errorf(api.CodeInternal, "internal error in the daemon: see its log for details")
	}
	writeJSON(w, api.HTTPStatus(ae.Code), ae)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// decodeJSON reads exactly one JSON object of bounded size into v and
// rejects unknown fields, so a typo in a client is an error, not a default.
func decodeJSON(w http.ResponseWriter, r *http.Request, v any) error {
	// An empty body is no JSON of another type: it gets decoding's own
	// "empty body" error below.
	if r.ContentLength != 0 {
		if err := checkJSONType(r); err != nil {
			return err
		}
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxBodyBytes))
	if err != nil {
		return err
	}
	if err := api.CheckUTF8(body); err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		var tooBig *http.MaxBytesError
		var syn *json.SyntaxError
		var typ *json.UnmarshalTypeError
		switch {
		case errors.As(err, &tooBig):
			return err
		case errors.Is(err, io.EOF):
			return api.Errorf(api.CodeInvalid, "request body is empty: send a JSON object")
		case errors.As(err, &syn), errors.Is(err, io.ErrUnexpectedEOF):
			return api.Errorf(api.CodeInvalid, "malformed JSON in request body: %w", err)
		case errors.As(err, &typ) && typ.Field == "":
			return api.Errorf(api.CodeInvalid, "request body must be a JSON object, not a JSON %s", typ.Value)
		case errors.As(err, &typ):
			return api.Errorf(api.CodeInvalid, "field %q must be %s, not a JSON %s", typ.Field, jsonKind(typ.Type), typ.Value)
		case strings.HasPrefix(err.Error(), "json: unknown field "):
			return api.Errorf(api.CodeInvalid, "%s in request body: remove it (the daemon accepts only documented fields)", strings.TrimPrefix(err.Error(), "json: "))
		}
		return api.Errorf(api.CodeInvalid, "bad request body: %w", err)
	}
	if dec.More() {
		return api.Errorf(api.CodeInvalid, "request body has data after the JSON object: send exactly one object")
	}
	return nil
}

// jsonKind names the JSON a Go type decodes from, in the words of the JSON
// spec, so an error never shows a Go type name.
func jsonKind(t reflect.Type) string {
	if t == reflect.TypeFor[json.RawMessage]() {
		return "JSON"
	}
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "true or false"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return "a whole number"
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "a whole number >= 0"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Slice, reflect.Array:
		return "an array"
	case reflect.Pointer:
		return jsonKind(t.Elem())
	}
	return "an object"
}

// unauthorizedMessage is the 401 body of the admin API. It names the file
// but not where it is: anyone may knock, and the home's path is the map to
// the token.
var unauthorizedMessage = fmt.Sprintf("missing or wrong bearer token: send `Authorization: Bearer <token>` with the token from %s in the daemon's home "+
	"(the agent-worker CLI does this itself when AGENT_WORKER_HOME names the running daemon's home); agents use their own tokens on /mcp", api.DaemonFile)

// requireToken rejects any request without the daemon's bearer token. The
// comparison takes constant time so the token cannot be guessed byte by byte.
func (h *Server) requireToken(next http.Handler) http.Handler {
	want := []byte("Bearer " + h.token)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got := []byte(r.Header.Get("Authorization"))
		if subtle.ConstantTimeCompare(got, want) != 1 {
			w.Header().Set("WWW-Authenticate", `Bearer realm="agent-worker"`)
			writeJSON(w, http.StatusUnauthorized, api.Errorf(api.CodeUnauthorized, "%s", unauthorizedMessage))
			return
		}
		next.ServeHTTP(w, r)
	})
}

// statusRecorder remembers the status for the request log.
type statusRecorder struct {
	http.ResponseWriter
	status int
}

func (s *statusRecorder) WriteHeader(code int) {
	s.status = code
	s.ResponseWriter.WriteHeader(code)
}

// Flush keeps streaming responses (SSE) working through the recorder.
func (s *statusRecorder) Flush() {
	if f, ok := s.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func logRequests(log hclog.Logger, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		rec := &statusRecorder{ResponseWriter: w, status: http.StatusOK}
		next.ServeHTTP(rec, r)
		log.Debug("request", "method", r.Method, "path", r.URL.Path, "status", rec.status, "ms", time.Since(start).Milliseconds())
	})
}

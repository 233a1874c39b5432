package api

import "github.com/agent-worker/agent-worker/host/contract"

// The wire types whose fields are the standard library's are
// host/contract's. These aliases keep the names the CLI and the daemon's
// parts use in many places (three files or more); a type named in fewer
// is written contract.X where it is used. The types that hold the SDK's
// shared types (agents with their backend.AgentConfig, messages, tasks,
// proposals, questions, worktrees) are api's own: see types.go.
type (
	Workflow         = contract.Workflow
	WorkflowList     = contract.WorkflowList
	StartWorkflow    = contract.StartWorkflow
	Member           = contract.Member
	Progress         = contract.Progress
	ListenFallback   = contract.ListenFallback
	Worker           = contract.Worker
	StoreHealth      = contract.StoreHealth
	Status           = contract.Status
	Cancelled        = contract.Cancelled
	TaskCreate       = contract.TaskCreate
	TaskCancel       = contract.TaskCancel
	SendRequest      = contract.SendRequest
	DocumentWrite    = contract.DocumentWrite
	MCPConfig        = contract.MCPConfig
	Plugin           = contract.Plugin
	PluginList       = contract.PluginList
	SpareEvent       = contract.SpareEvent
	SpareStats       = contract.SpareStats
	RunRequest       = contract.RunRequest
	RunChunk         = contract.RunChunk
	RunTool          = contract.RunTool
	Run              = contract.Run
	RunList          = contract.RunList
	RunEvent         = contract.RunEvent
	PromptEvent      = contract.PromptEvent
	Spend            = contract.Spend
	ScheduleRequest  = contract.ScheduleRequest
	RunEventInfo     = contract.RunEventInfo
	AgentStateEvent  = contract.AgentStateEvent
	BudgetRequest    = contract.BudgetRequest
	SandboxState     = contract.SandboxState
	SandboxInfo      = contract.SandboxInfo
	ProcessControl   = contract.ProcessControl
	HookCall         = contract.HookCall
	AttachedSession  = contract.AttachedSession
	HookResult       = contract.HookResult
	SearchHit        = contract.SearchHit
	SearchResult     = contract.SearchResult
	NotificationBody = contract.NotificationBody
	Notification     = contract.Notification
	NotificationList = contract.NotificationList
	IntegrateRequest = contract.IntegrateRequest
	Disk             = contract.Disk
	Identity         = contract.Identity
	ConsoleLogin     = contract.ConsoleLogin
	Resource         = contract.Resource
	TLSInfo          = contract.TLSInfo
)

// The constants of the wire (contract's).
const (
	SpareStarted = contract.SpareStarted
	SpareTaken   = contract.SpareTaken
	SpareKilled  = contract.SpareKilled
	ColdStart    = contract.ColdStart

	RunEventPrompt  = contract.RunEventPrompt
	RunEventContext = contract.RunEventContext

	SandboxOn          = contract.SandboxOn
	SandboxOff         = contract.SandboxOff
	SandboxUnavailable = contract.SandboxUnavailable

	HeaderSignature       = contract.HeaderSignature
	HeaderDelivery        = contract.HeaderDelivery
	HeaderRequestID       = contract.HeaderRequestID
	HeaderGitHubEvent     = contract.HeaderGitHubEvent
	HeaderGitLabToken     = contract.HeaderGitLabToken
	HeaderGitLabEvent     = contract.HeaderGitLabEvent
	HeaderGitLabEventUUID = contract.HeaderGitLabEventUUID
	HeaderNotifySignature = contract.HeaderNotifySignature
	HeaderNotifyDelivery  = contract.HeaderNotifyDelivery
	HeaderNotifyEvent     = contract.HeaderNotifyEvent

	HookSessionStart     = contract.HookSessionStart
	HookUserPromptSubmit = contract.HookUserPromptSubmit
	HookPostToolUse      = contract.HookPostToolUse
	HookPreCompact       = contract.HookPreCompact
	HookStop             = contract.HookStop
	HookSessionEnd       = contract.HookSessionEnd

	Service = contract.Service
)

// HookEvents lists the hook events, in the order of a session's life.
var HookEvents = contract.HookEvents

// ValidHookEvent reports whether event is one of HookEvents.
func ValidHookEvent(event string) bool { return contract.ValidHookEvent(event) }

// Package config owns the typed pallasgw configuration: the YAML schema,
// environment expansion, defaults, the Secret type and validation
// that reports every problem as "file:line: key: message". It is a leaf: it
// imports no other package of the project, and it never builds anything from
// a config (that is the gateway's snapshot builder's job).
package config

import (
	"sort"
	"time"
)

// Config is one parsed, defaulted and validated config file. It is immutable
// once Load returns: nothing may write to it or shallow-copy it for writing.
type Config struct {
	Name            string        `yaml:"name"`             // required
	Version         string        `yaml:"version"`          // default "1.0.0"
	Namespace       string        `yaml:"namespace"`        // default: Name
	Listen          string        `yaml:"listen"`           // default "0.0.0.0:8200"
	PublicURL       string        `yaml:"public_url"`       // default "" (derived from the request)
	Host            string        `yaml:"host"`             // default "" (the request's host)
	RegistryPort    int           `yaml:"registry_port"`    // default 0 = none
	TrustedProxies  []string      `yaml:"trusted_proxies"`  // CIDRs or IPs; default none
	AllowedOrigins  []string      `yaml:"allowed_origins"`  // default none
	StateKey        string        `yaml:"state_key"`        // base64, 32 bytes; seals requestState; default random per process
	EnvFile         string        `yaml:"env_file"`         // default ""
	ShutdownTimeout time.Duration `yaml:"shutdown_timeout"` // default 30s
	// DrainDelay is how long a SIGTERM'd gateway keeps serving new calls
	// after /readyz turned 503, so that a proxy's health checks move away
	// first; default 5s, 0 written explicitly: none.
	DrainDelay time.Duration     `yaml:"drain_delay"`
	Console    bool              `yaml:"console"` // the web console at "/"; default true
	Reload     Reload            `yaml:"reload"`
	Admin      Admin             `yaml:"admin"`
	Limits     Limits            `yaml:"limits"`
	Auth       Auth              `yaml:"auth"`
	Quotas     Quotas            `yaml:"quotas"`
	Sessions   Sessions          `yaml:"sessions"`
	Tracing    Tracing           `yaml:"tracing"`
	Models     Models            `yaml:"models"`
	MCP        MCP               `yaml:"mcp"`
	Policy     Policy            `yaml:"policy"`
	Agents     map[string]*Agent `yaml:"agents"`
	// AgentCards are directories of agent cards (*.md), relative
	// to the config's directory; their agents join Agents. Default none.
	AgentCards []string `yaml:"agent_cards"`
	// AgentsEndpoint serves POST /mcp: every agent the caller may use as
	// one tool; default false.
	AgentsEndpoint bool `yaml:"agents_endpoint"`
	// Wire is the switch of the hand-written MCP paths (agents/wire).
	Wire Wire `yaml:"wire"`
	// Pins is the tool pins file (approved and rejected tool definitions
	// per server), relative to the config's directory; watched and
	// reloaded with the config. Default "" (none; servers with pin_tools
	// warn or enforce need one).
	Pins string `yaml:"pins"`
	// Credentials is the key callers' upstream tokens (mcp.servers.X.oauth)
	// are sealed with in the session store.
	Credentials Credentials `yaml:"credentials"`

	// File is the path the config was loaded from; Hash the hex SHA-256 of
	// the raw file bytes plus the env_file bytes. Not YAML keys.
	File string `yaml:"-"`
	Hash string `yaml:"-"`
	// Warnings are non-fatal findings of validation, to be logged.
	Warnings []string `yaml:"-"`
	// Infos are findings worth knowing that need no change, to be listed
	// (validate's "info:" lines, the log at info): a passthrough-mode rule
	// keyed by a toolbox caller's agent_id.
	Infos []string `yaml:"-"`
	// EnvFilePath is env_file resolved against the config's directory.
	EnvFilePath string `yaml:"-"`
	// PinsPath is Pins resolved against the config's directory; the
	// file's bytes are part of Hash.
	PinsPath string `yaml:"-"`
	// AgentCardDirs are AgentCards resolved against the config's
	// directory (watched for reloads).
	AgentCardDirs []string `yaml:"-"`

	pos *positions // where the keys are written (ErrorAt); nil when not loaded from a file
}

// Refs are the files a config names besides itself, resolved against its
// directory: what a reload reads, and so what the watcher follows.
type Refs struct {
	EnvFile  string   // env_file, or the optional .env beside the config
	Pins     string   // the pins file; "" for none
	CardDirs []string // the agent_cards directories
}

// Refs returns the files c names (EnvFilePath, PinsPath, AgentCardDirs).
func (c *Config) Refs() Refs {
	return Refs{EnvFile: c.EnvFilePath, Pins: c.PinsPath, CardDirs: c.AgentCardDirs}
}

// Wire turns the gateway's hand-written MCP paths (agents/wire) on or off.
// It is read at start; changing it takes a restart.
type Wire struct {
	Fast bool `yaml:"fast"` // default true; false: mcp-go serves and calls every request
}

// Reload configures the file watcher.
type Reload struct {
	Debounce     time.Duration `yaml:"debounce"`      // default 100ms
	PollInterval time.Duration `yaml:"poll_interval"` // default 30s; 0 = off (set explicitly)
}

// Admin guards /-/reload and /-/status.
type Admin struct {
	Token Secret `yaml:"token"` // default "": loopback callers only
}

// Limits bound what a request may carry.
type Limits struct {
	MaxBodyBytes       int64 `yaml:"max_body_bytes"`        // default 10485760
	MaxHistoryEntries  int   `yaml:"max_history_entries"`   // default 500
	MaxImageBytes      int64 `yaml:"max_image_bytes"`       // default 5242880 (decoded)
	MaxToolResultBytes int   `yaml:"max_tool_result_bytes"` // default 102400
}

// Auth is inbound authentication.
type Auth struct {
	Mode   string  `yaml:"mode"` // passthrough (default) | tokens | jwt
	Tokens []Token `yaml:"tokens"`
	JWT    *JWT    `yaml:"jwt"` // required in mode jwt
}

// JWT configures callers that present an access token of an identity
// provider (auth.mode jwt). Static tokens are accepted beside them.
type JWT struct {
	Issuer     string   `yaml:"issuer"`     // required
	JWKSURL    string   `yaml:"jwks_url"`   // default: from the issuer's OIDC/OAuth discovery document
	Audiences  []string `yaml:"audiences"`  // default: the agent's canonical URL
	Algorithms []string `yaml:"algorithms"` // default [RS256, ES256, EdDSA]; asymmetric only
	// ClockSkew is allowed between the gateway's clock and the issuer's
	// for exp, nbf and iat; default 60s.
	ClockSkew     time.Duration `yaml:"clock_skew"`
	IdentityClaim string        `yaml:"identity_claim"` // default sub
	// Scopes are the scopes a token needs, per agent glob; every glob that
	// matches an agent adds its scopes.
	Scopes               map[string][]string `yaml:"scopes"`
	AuthorizationServers []string            `yaml:"authorization_servers"` // default [issuer]
}

// Token is one accepted bearer token.
type Token struct {
	Name   string   `yaml:"name"`   // caller identity
	Token  Secret   `yaml:"token"`  // plain, or "sha256:<hex>"
	Agents []string `yaml:"agents"` // globs; default ["*"]
}

// Models configures providers and the default model.
type Models struct {
	Default      string                  `yaml:"default"` // default "passthrough"
	Providers    Providers               `yaml:"providers"`
	Capabilities map[string]Capabilities `yaml:"capabilities"`
	Prices       map[string]Price        `yaml:"prices"`
}

// Providers are the LLM providers by name; a model is
// "<provider name>.<model>". Names are letters, digits, '_' and '-'.
type Providers map[string]*Provider

// Provider types: the API a provider speaks.
const (
	ProviderOpenAI    = "openai"
	ProviderAnthropic = "anthropic"
)

// Provider is one LLM provider's connection settings.
type Provider struct {
	Type               string            `yaml:"type"`                 // openai | anthropic; default: the name when it is openai or anthropic
	BaseURL            string            `yaml:"base_url"`             // openai: https://api.openai.com/v1; anthropic: https://api.anthropic.com
	APIKey             Secret            `yaml:"api_key"`              // default ""
	Headers            map[string]Secret `yaml:"headers"`              // static, on every request; default none
	ForwardHeaders     map[string]string `yaml:"forward_headers"`      // inbound -> outbound, per call; default none
	ForwardInboundAuth bool              `yaml:"forward_inbound_auth"` // default false
	// ExtraBlockedHeaders are names this provider must never receive,
	// beside the built-in list and policy.extra_blocked_headers; exact
	// names or prefixes ending in "*". Default none.
	ExtraBlockedHeaders []string      `yaml:"extra_blocked_headers"`
	Timeout             time.Duration `yaml:"timeout"`     // default 300s
	MaxRetries          *int          `yaml:"max_retries"` // default 2
	// SDKBody (type openai) encodes request bodies through openai-go's
	// param types instead of pallasgw's direct encoder: the same bytes,
	// more CPU per call. Default false.
	SDKBody bool `yaml:"sdk_body"`

	// Name is the provider's key (set by Load).
	Name string `yaml:"-"`
}

// Capabilities are published in the registry for a model. A model with
// an entry whose vision is false takes no image: send_message refuses one
// (or, with DropImages, drops it with a note to the model), and a tool
// result's images are dropped with a note.
type Capabilities struct {
	Vision          bool `yaml:"vision"` // default false
	ContextWindow   int  `yaml:"context_window"`
	MaxOutputTokens int  `yaml:"max_output_tokens"`
	// DropImages (with vision false) drops the images of a message,
	// telling the model so, instead of refusing the message. Default false.
	DropImages bool `yaml:"drop_images"`
}

// Price is USD per million tokens.
type Price struct {
	Input  float64 `yaml:"input"`
	Output float64 `yaml:"output"`
}

// MCP lists downstream MCP servers.
type MCP struct {
	Servers map[string]*Server `yaml:"servers"`
}

// Server is one downstream MCP server.
type Server struct {
	Transport          string            `yaml:"transport"` // http | sse | stdio; default stdio when command is set, else http
	URL                string            `yaml:"url"`
	Headers            map[string]Secret `yaml:"headers"`              // static; always win
	ForwardInboundAuth bool              `yaml:"forward_inbound_auth"` // default false
	ForwardHeaders     map[string]string `yaml:"forward_headers"`      // inbound -> outbound; a bare token mapped to Authorization is sent as "Bearer <token>"
	// ExtraBlockedHeaders are names this server must never receive, beside
	// the built-in list and policy.extra_blocked_headers; exact names or
	// prefixes ending in "*". Default none.
	ExtraBlockedHeaders []string          `yaml:"extra_blocked_headers"`
	Timeout             time.Duration     `yaml:"timeout"` // per tool call; default 60s
	Command             string            `yaml:"command"`
	Args                []string          `yaml:"args"`
	Env                 map[string]Secret `yaml:"env"`
	Dir                 string            `yaml:"dir"`
	TokenExchange       *TokenExchange    `yaml:"token_exchange"` // RFC 8693; needs auth.mode jwt
	// OAuth makes each caller connect its own account at the server's
	// authorization server; its token is what the server receives for
	// that caller (oauth.go). Default none.
	OAuth *OAuth `yaml:"oauth"`
	// PinTools pins the server's tool definitions: off | warn (serve and
	// report a new or changed one) | enforce (hide it and refuse its
	// calls until approved). Default off; warn and enforce need pins.
	PinTools   string     `yaml:"pin_tools"`
	ToolChecks ToolChecks `yaml:"tool_checks"`
	// SessionScope is whom a downstream session serves: caller (one per
	// caller and outbound header set), call (a fresh one per tool
	// execution, closed after it) or shared (one per header set). Default
	// caller for http and sse, shared for stdio.
	SessionScope string `yaml:"session_scope"`
	// MaxSessions caps the server's open sessions (stdio: processes),
	// the least recently used idle one closed for a new one; default 64.
	MaxSessions int `yaml:"max_sessions"`

	expanded []string // see Expanded
}

// Expanded returns the values that ${VAR} expansion put into the server's
// url, command, args, env, dir and headers (those of 4 characters or
// more, sorted): what the server's process or address carries
// from the environment, such as a token in its args. They are as secret as
// the environment they came from, so they are taken out of the server's
// stderr lines and errors wherever those are logged.
func (s *Server) Expanded() []string { return s.expanded }

// ToolChecks are the poisoning checks of a server's tool definitions.
type ToolChecks struct {
	Mode           string   `yaml:"mode"`            // warn (report) | refuse (handle as unapproved); default warn
	MaxDescription int      `yaml:"max_description"` // characters; default 2048; 0 written = no bound
	Patterns       []string `yaml:"patterns"`        // regexes on descriptions; default: built-in injection phrasings; [] = none
}

// TokenExchange trades the caller's access token for one meant for the
// server (RFC 8693), sent as "Authorization: Bearer <token>".
type TokenExchange struct {
	TokenURL     string   `yaml:"token_url"` // required
	ClientID     string   `yaml:"client_id"` // required: the gateway's own client
	ClientSecret Secret   `yaml:"client_secret"`
	Audience     string   `yaml:"audience"` // audience and/or resource name the server
	Resource     string   `yaml:"resource"`
	Scopes       []string `yaml:"scopes"`
}

// Policy is the caller and header policy.
type Policy struct {
	ExtraBlockedHeaders   []string         `yaml:"extra_blocked_headers"`
	Callers               map[string]*Rule `yaml:"callers"`
	Default               *Rule            `yaml:"default"` // default: allow all
	DenyOnMissingIdentity bool             `yaml:"deny_on_missing_identity"`
	// Strict makes the rules that select nothing (a caller rule no caller
	// has, a glob matching no agent or server) errors; default false:
	// warnings (validate, the reload log, /-/status).
	Strict bool `yaml:"strict"`
	// Audit sets the levels of the audit lines ("policy decision").
	Audit AuditLevels `yaml:"audit"`
}

// AuditLevels are the log levels of the audit lines: debug, info, warn or
// error. A level below the logger's (--log-level) is not written; the
// decisions are counted in pallasgw_policy_decisions_total either way.
type AuditLevels struct {
	// Listing is the level of an allowed request that runs nothing:
	// initialize, server/discover, the lists, ping, notifications, a
	// session's DELETE. Default debug.
	Listing string `yaml:"listing"`
	// Calls is the level of every other line: tools/call, prompts/get,
	// resources/read, each tool decision, and every refusal. Default info.
	Calls string `yaml:"calls"`
}

// Quotas is where the callers' limits are counted.
type Quotas struct {
	Store        string `yaml:"store"`          // memory (default) | redis://host:6379/0 (shared by replicas)
	OnStoreError string `yaml:"on_store_error"` // open (default): calls go on | closed: calls are refused
}

// Sessions is where what a session changes is kept for every replica
// (agents/sessions).
type Sessions struct {
	// Store is memory (default: each replica its own) or a
	// redis://host:6379/0 URL shared by the replicas. A change needs a
	// restart.
	Store string `yaml:"store"`
}

// Tracing exports OpenTelemetry traces over OTLP/HTTP. The
// exporter also honours the standard OTEL_EXPORTER_OTLP_* variables
// (headers, timeout, TLS) and OTEL_RESOURCE_ATTRIBUTES.
type Tracing struct {
	// Endpoint is the collector's OTLP/HTTP base URL, e.g.
	// http://127.0.0.1:4318 (/v1/traces is added when it has no path);
	// default "": OTEL_EXPORTER_OTLP_TRACES_ENDPOINT or
	// OTEL_EXPORTER_OTLP_ENDPOINT when set, else tracing is off.
	Endpoint    string  `yaml:"endpoint"`
	Sampling    float64 `yaml:"sampling"`     // ratio of new traces kept, 0 to 1; default 1.0 (a caller's sampled flag wins)
	ServiceName string  `yaml:"service_name"` // default "pallasgw"
}

// QuotaLimits bound one caller; 0 means unlimited.
type QuotaLimits struct {
	RequestsPerMinute int   `yaml:"requests_per_minute"` // token bucket, bursts up to the rate
	TokensPerDay      int64 `yaml:"tokens_per_day"`      // LLM tokens (input + output), UTC days
}

// Rule narrows what one caller may use.
type Rule struct {
	// Match defines a caller by the claims of its JWT: claim -> value, or
	// a list of values (any of them). A claim whose value is a list
	// matches when any element does. Callers with a match are JWT callers;
	// one matching several rules gets the first in file order.
	Match   map[string]any `yaml:"match"`
	Agents  []string       `yaml:"agents"`
	Servers []string       `yaml:"servers"`
	Tools   ToolRules      `yaml:"tools"`
	Limits  QuotaLimits    `yaml:"limits"`

	// Line is where the rule starts in the file (set by Load).
	Line int `yaml:"-"`
}

// ToolRules are allow/deny globs; deny wins; empty allow = all.
type ToolRules struct {
	Allow []string `yaml:"allow"`
	Deny  []string `yaml:"deny"`
}

// Overrides are the send_message arguments a caller may use.
type Overrides struct {
	Params bool `yaml:"params"` // params: sampling parameters over the agent's
	System bool `yaml:"system"` // system_override, system_append
	Tools  bool `yaml:"tools"`  // tools: globs narrowing the agent's tools
}

// GatewayStatus is a toolbox's get_gateway_status tool.
type GatewayStatus struct {
	Enabled bool `yaml:"enabled"` // default false: no such tool
	// Callers are globs of the caller identities that may call it (token
	// names, policy.callers rules; agent_id in passthrough mode); default:
	// every caller of the toolbox.
	Callers []string `yaml:"callers"`
}

// AgentHealth tunes get_health's view of an agent's recent model calls:
// it reports degraded while the 95th percentile of the last Window calls'
// durations passes SlowP95.
type AgentHealth struct {
	// SlowP95 is the p95 call duration past which the agent is degraded;
	// default 30s, 0 written explicitly: never.
	SlowP95 time.Duration `yaml:"slow_p95"`
	// Window is how many of the latest model calls (of the last
	// LatencyMaxAge) the p95 is taken over; default 50. Fewer than
	// MinLatencySamples calls say nothing.
	Window int `yaml:"window"`
}

// Icon is a registry icon.
type Icon struct {
	Src      string `yaml:"src" json:"src"`
	Sizes    string `yaml:"sizes,omitempty" json:"sizes,omitempty"`
	MIMEType string `yaml:"mime_type,omitempty" json:"mimeType,omitempty"`
}

// Agent kinds.
const (
	KindLLM      = "llm"
	KindChain    = "chain"
	KindRouter   = "router"
	KindParallel = "parallel"
	KindProxy    = "proxy"
	KindToolbox  = "toolbox"
	// KindEvaluatorOptimizer refines a generator's draft until an
	// evaluator rates it min_rating.
	KindEvaluatorOptimizer = "evaluator_optimizer"
	// KindOrchestrator plans steps over child agents with an LLM, runs
	// them and synthesizes the answer.
	KindOrchestrator = "orchestrator"
)

// Kinds lists the agent kinds a config may name, sorted: each has a
// factory registered with the agents core by its kind's package.
func Kinds() []string {
	out := make([]string, 0, len(knownKinds))
	for k := range knownKinds {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// Ratings of an evaluator, worst first.
var Ratings = []string{"POOR", "FAIR", "GOOD", "EXCELLENT"}

// Orchestrator plan modes.
const (
	PlanFull      = "full"
	PlanIterative = "iterative"
)

// Agent run_as values.
const (
	RunAsCaller   = "caller"   // default
	RunAsWorkflow = "workflow" // the agents it runs are not held to the caller's rules
)

// Agent is one served agent.
type Agent struct {
	Kind          string         `yaml:"kind"`  // llm (default)
	Title         string         `yaml:"title"` // default: key title-cased
	Description   string         `yaml:"description"`
	Icons         []Icon         `yaml:"icons"`
	Port          int            `yaml:"port"`      // legacy alias; 0 = none
	ToolName      string         `yaml:"tool_name"` // default send_message
	Model         string         `yaml:"model"`     // default models.default
	Instruction   string         `yaml:"instruction"`
	Servers       []string       `yaml:"servers"`
	Agents        []string       `yaml:"agents"`
	Tools         ToolRules      `yaml:"tools"`
	Params        map[string]any `yaml:"params"`
	MaxIterations int            `yaml:"max_iterations"` // default 12
	Timeout       time.Duration  `yaml:"timeout"`        // default 300s
	// StreamText sends an llm agent's text deltas as progress messages
	// "{agent} text: ..." to callers that passed a progress token; default false.
	StreamText bool `yaml:"stream_text"`
	// Overrides lets callers change an llm agent's run per call through
	// send_message arguments; default: nothing.
	Overrides Overrides `yaml:"overrides"`
	Sequence  []string  `yaml:"sequence"` // chain
	FanOut    []string  `yaml:"fan_out"`  // parallel
	FanIn     string    `yaml:"fan_in"`   // parallel
	// evaluator_optimizer
	Generator      string `yaml:"generator"`
	Evaluator      string `yaml:"evaluator"`
	MinRating      string `yaml:"min_rating"`      // EXCELLENT | GOOD | FAIR | POOR; default GOOD
	MaxRefinements int    `yaml:"max_refinements"` // default 3; 0 written explicitly = evaluate once, never refine
	// orchestrator (also agents, model, max_iterations: the steps it may run)
	Plan string `yaml:"plan"` // full (default) | iterative
	// RunAs is whose agent rules the agents this one runs (sequence,
	// agents, fan_out, fan_in, generator, evaluator) are held to: "caller"
	// (default) applies the caller's (its token's agents, its
	// policy.callers rule, its JWT scopes) to each of them, as if it called
	// them itself; "workflow" runs them as this agent, for callers allowed
	// only the workflow.
	RunAs string `yaml:"run_as"`
	// GatewayStatus adds get_gateway_status to a toolbox agent: what GET
	// /-/status answers, for the callers it names. Default: off.
	GatewayStatus *GatewayStatus `yaml:"gateway_status"`
	// ToolSearch: search_tools on a proxy, and an llm agent's model searching
	// its tools instead of being offered all of them (toolsearch.go).
	// Default: off.
	ToolSearch ToolSearch `yaml:"tool_search"`
	// Health tunes what get_health reports of the agent's own calls.
	Health AgentHealth `yaml:"health"`
	// ToolMode is how an llm agent's model calls tools: tools (default,
	// one model tool per tool) or code (one run_script tool; codemode.go).
	ToolMode string `yaml:"tool_mode"`
	// CodeMode bounds run_script's scripts (tool_mode code, toolbox);
	// defaults in codemode.go.
	CodeMode CodeMode `yaml:"code_mode"`

	// Name is the agent's key (set by Load).
	Name string `yaml:"-"`
}

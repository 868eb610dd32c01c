// Package pallasimport is `pallasgw import`: it converts a Pallas project
// (agents.yaml, fastagent.config.yaml, fastagent.secrets.yaml, and what it
// can read of the agents' fast-agent Python modules) into a pallasgw config,
// and lists what it could not map. Each agent keeps its Pallas port as its
// legacy alias. It reads files only; it imports no package of the gateway.
package pallasimport

import (
	"bytes"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Result is a converted project.
type Result struct {
	Config   []byte   // the pallasgw config (YAML)
	Agents   int      // agents converted
	Unmapped []string // what was not mapped, one sentence each
	// Cards are the agent cards by file name (<agent>.md), when Options
	// asked for them; the config then lists no agents but points
	// agent_cards at their directory.
	Cards map[string][]byte
}

// Options shape the output of Convert.
type Options struct {
	// Cards, when set, writes each agent as an agent card (SPEC §16) and
	// the config's agent_cards: [Cards]: the cards' directory as the
	// config will name it (relative to the config's directory, or
	// absolute).
	Cards string
}

// pallasAgents is agents.yaml.
type pallasAgents struct {
	Name         string `yaml:"name"`
	Version      string `yaml:"version"`
	Host         string `yaml:"host"`
	Namespace    string `yaml:"namespace"`
	RegistryPort int    `yaml:"registry_port"`
	Agents       map[string]struct {
		Module      string   `yaml:"module"`
		Port        int      `yaml:"port"`
		Title       string   `yaml:"title"`
		Description string   `yaml:"description"`
		DependsOn   []string `yaml:"depends_on"`
	} `yaml:"agents"`
}

// ConvertWith reads the Pallas project in dir into one config file.
func ConvertWith(dir string, opts Options) (*Result, error) {
	res := &Result{}
	note := func(format string, args ...any) { res.Unmapped = append(res.Unmapped, fmt.Sprintf(format, args...)) }
	var pa pallasAgents
	if err := readYAML(filepath.Join(dir, "agents.yaml"), &pa, true); err != nil {
		return nil, err
	}
	if pa.Name == "" {
		return nil, fmt.Errorf("%s: name is required", filepath.Join(dir, "agents.yaml"))
	}
	fa := map[string]any{}
	if err := readYAML(filepath.Join(dir, "fastagent.config.yaml"), &fa, false); err != nil {
		return nil, err
	}
	secrets := map[string]any{}
	if err := readYAML(filepath.Join(dir, "fastagent.secrets.yaml"), &secrets, false); err != nil {
		return nil, err
	}
	out := &outConfig{Name: pa.Name, Version: pa.Version, Namespace: pa.Namespace, Host: pa.Host, RegistryPort: pa.RegistryPort}
	if _, err := os.Stat(filepath.Join(dir, ".env")); err == nil {
		abs, _ := filepath.Abs(filepath.Join(dir, ".env"))
		out.EnvFile = abs
	}
	out.Models = convertModels(fa, secrets, note)
	ports := map[int]string{}
	for name, a := range pa.Agents {
		ports[a.Port] = name
	}
	if pa.RegistryPort != 0 {
		ports[pa.RegistryPort] = "registry_port"
	}
	out.Listen = freeListen(ports, note)
	servers, agentServers := convertServers(fa, secrets, ports, pa.Host, note)
	out.MCP.Servers = servers
	out.Agents = map[string]*outAgent{}
	for _, name := range sortedKeys(pa.Agents) {
		a := pa.Agents[name]
		oa := &outAgent{Title: a.Title, Description: a.Description, Port: a.Port}
		readModule(dir, name, a.Module, oa, out.Models.Default, note)
		// Servers that were other Pallas agents' ports become sub-agents.
		var srvs []string
		for _, s := range oa.Servers {
			if sub, ok := agentServers[s]; ok {
				oa.Agents = append(oa.Agents, sub)
				continue
			}
			if servers[s] == nil {
				note("agent %s: server %q is not in fastagent.config.yaml mcp.servers; dropped", name, s)
				continue
			}
			srvs = append(srvs, s)
		}
		oa.Servers = srvs
		if len(a.DependsOn) > 0 {
			note("agent %s: depends_on %v is not needed (agents run in-process and start together)", name, a.DependsOn)
		}
		out.Agents[name] = oa
	}
	res.Agents = len(out.Agents)
	if opts.Cards != "" {
		res.Cards = map[string][]byte{}
		for name, a := range out.Agents {
			c, err := cardFile(a)
			if err != nil {
				return nil, fmt.Errorf("agent %s: %w", name, err)
			}
			res.Cards[name+".md"] = c
		}
		out.Agents, out.AgentCards = nil, []string{opts.Cards}
	}
	var b bytes.Buffer
	fmt.Fprintf(&b, "# Converted from the Pallas project %s by pallasgw import.\n# Check it with: pallasgw validate --config <this file>\n", dir)
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	if err := enc.Encode(out); err != nil {
		return nil, err
	}
	res.Config = b.Bytes()
	sort.Strings(res.Unmapped)
	return res, nil
}

// cardFile is agent a as an agent card: its keys as YAML front matter, its
// instruction as the body.
func cardFile(a *outAgent) ([]byte, error) {
	keys := *a
	keys.Instruction = ""
	front, err := yaml.Marshal(&keys)
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	b.WriteString("---\n")
	if string(front) != "{}\n" {
		b.Write(front)
	}
	b.WriteString("---\n")
	if a.Instruction != "" {
		b.WriteString(strings.TrimRight(a.Instruction, "\n") + "\n")
	}
	return b.Bytes(), nil
}

func readYAML(path string, v any, required bool) error {
	raw, err := os.ReadFile(path)
	if err != nil {
		if !required && os.IsNotExist(err) {
			return nil
		}
		return err
	}
	if err := yaml.Unmarshal(raw, v); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}

// freeListen is the gateway's one port: 8200 unless a Pallas port (each
// kept as a legacy alias) has it.
func freeListen(taken map[int]string, note func(string, ...any)) string {
	port := 8200
	for taken[port] != "" {
		port++
	}
	if port != 8200 {
		note("listen: port 8200 is used by %s, so the gateway listens on %d", taken[8200], port)
	}
	return "0.0.0.0:" + strconv.Itoa(port)
}

func convertModels(fa, secrets map[string]any, note func(string, ...any)) outModels {
	m := outModels{Default: str(fa["default_model"]), Providers: map[string]*outProvider{}}
	if m.Default == "" {
		m.Default = "passthrough"
		note("fastagent.config.yaml: no default_model; models.default is passthrough")
	}
	prefix, model, _ := strings.Cut(m.Default, ".")
	for _, kind := range []string{"openai", "anthropic"} {
		conf, _ := fa[kind].(map[string]any)
		sec, _ := secrets[kind].(map[string]any)
		if conf == nil && sec == nil && prefix != kind {
			continue
		}
		p := &outProvider{}
		for _, src := range []map[string]any{conf, sec} {
			for k, v := range src {
				switch k {
				case "api_key":
					p.APIKey = envDefault(str(v), "")
				case "base_url":
					def := ""
					if kind == "openai" {
						def = "https://api.openai.com/v1" // Pallas's default when OPENAI_BASE_URL is unset
					}
					p.BaseURL = envDefault(str(v), def)
				default:
					note("%s.%s: not mapped", kind, k)
				}
			}
		}
		if p.APIKey != "" && !strings.Contains(p.APIKey, "${") {
			note("%s.api_key: copied in clear from fastagent.secrets.yaml; move it into the environment (${VAR})", kind)
		}
		m.Providers[kind] = p
	}
	if caps, ok := fa["model_capabilities"].(map[string]any); ok && model != "" {
		c := outCaps{ContextWindow: 131072, MaxOutputTokens: 16384} // Pallas's defaults
		if v, ok := caps["vision"].(bool); ok {
			c.Vision = v
		}
		if v, ok := caps["context_window"].(int); ok {
			c.ContextWindow = v
		}
		if v, ok := caps["max_output_tokens"].(int); ok {
			c.MaxOutputTokens = v
		}
		m.Capabilities = map[string]outCaps{m.Default: c}
	}
	for _, k := range sortedKeys(fa) {
		switch k {
		case "default_model", "model_capabilities", "mcp", "openai", "anthropic":
		default:
			note("fastagent.config.yaml: %s: not mapped", k)
		}
	}
	return m
}

// envDefault turns "${VAR}" into "${VAR:-def}": Pallas reads an unset
// variable as empty, pallasgw refuses it unless it has a default.
func envDefault(v, def string) string {
	return envRef.ReplaceAllString(v, "${${1}:-"+def+"}")
}

var envRef = regexp.MustCompile(`\$\{([A-Za-z_][A-Za-z0-9_]*)\}`)

// convertServers maps mcp.servers (secrets merged in). A server whose URL
// is another Pallas agent's port is not kept: agents using it call that
// agent in-process (the second map: server name → agent).
func convertServers(fa, secrets map[string]any, ports map[int]string, host string, note func(string, ...any)) (map[string]*outServer, map[string]string) {
	out, agents := map[string]*outServer{}, map[string]string{}
	conf := mapAt(fa, "mcp", "servers")
	sec := mapAt(secrets, "mcp", "servers")
	for _, name := range sortedKeys(conf) {
		s := &outServer{}
		for _, src := range []map[string]any{asMap(conf[name]), asMap(sec[name])} {
			for _, k := range sortedKeys(src) {
				v := src[k]
				switch k {
				case "transport":
					s.Transport = str(v)
					if s.Transport == "streamable-http" || s.Transport == "streamable_http" {
						s.Transport = "http"
					}
				case "url":
					s.URL = str(v)
				case "headers": // merged: the secrets file's win on the same name
					s.Headers = mergeSecrets(s.Headers, v)
				case "env":
					s.Env = mergeSecrets(s.Env, v)
				case "forward_inbound_auth":
					s.ForwardInboundAuth, _ = v.(bool)
				case "command":
					s.Command = str(v)
				case "args":
					for _, a := range asList(v) {
						s.Args = append(s.Args, str(a))
					}
				case "cwd":
					s.Dir = str(v)
				case "read_timeout_seconds":
					if n, ok := v.(int); ok {
						s.Timeout = strconv.Itoa(n) + "s"
					}
				default:
					note("mcp.servers.%s.%s: not mapped", name, k)
				}
			}
		}
		if s.Transport == "" {
			// fast-agent's default, and pallasgw's: a server with a
			// command is a stdio server, anything else Streamable HTTP.
			s.Transport = "http"
			if s.Command != "" {
				s.Transport = "stdio"
			}
		}
		if u, err := url.Parse(s.URL); err == nil && s.URL != "" {
			h := u.Hostname()
			p, _ := strconv.Atoi(u.Port())
			if a := ports[p]; a != "" && a != "registry_port" && (h == "localhost" || h == "127.0.0.1" || h == host) {
				agents[name] = a
				note("mcp.servers.%s: the Pallas agent %s; agents using it call %s in-process (agents: [%s])", name, a, a, a)
				continue
			}
		}
		out[name] = s
	}
	return out, agents
}

// fastAgentCall finds a @fast.agent(...) decorator's arguments.
var (
	fastAgentCall = regexp.MustCompile(`(?s)@fast\.agent\((.*?)\)\s*\n\s*(?:async\s+)?def`)
	kwString      = func(k string) *regexp.Regexp {
		return regexp.MustCompile(`(?s)\b` + k + `\s*=\s*(?:"""(.*?)"""|'''(.*?)'''|"((?:[^"\\]|\\.)*)"|'((?:[^'\\]|\\.)*)')`)
	}
	kwInstruction = kwString("instruction")
	kwModel       = kwString("model")
	kwName        = kwString("name")
	kwServers     = regexp.MustCompile(`\bservers\s*=\s*\[([^\]]*)\]`)
	quoted        = regexp.MustCompile(`"([^"]*)"|'([^']*)'`)
)

// readModule takes the instruction, servers and model of the agent from
// its fast-agent module's @fast.agent decorator, as far as they are
// literals; it notes what it could not read.
func readModule(dir, name, module string, a *outAgent, defaultModel string, note func(string, ...any)) {
	path := filepath.Join(dir, modulePath(module))
	src, err := os.ReadFile(path)
	if err != nil {
		note("agent %s: module %s (%s) not readable: set its instruction, servers and model by hand", name, module, path)
		return
	}
	calls := fastAgentCall.FindAllSubmatch(src, -1)
	if len(calls) == 0 {
		note("agent %s: no @fast.agent(...) in %s: set its instruction, servers and model by hand", name, path)
		return
	}
	args := calls[0][1]
	for _, c := range calls {
		if n := first(kwName.FindSubmatch(c[1])); n == name {
			args = c[1]
		}
	}
	if len(calls) > 1 {
		note("agent %s: %s defines %d agents; only one is converted (workflows: set their kind by hand)", name, path, len(calls))
	}
	if s := first(kwInstruction.FindSubmatch(args)); s != "" {
		a.Instruction = strings.TrimSpace(s)
	} else {
		note("agent %s: instruction in %s is not a string literal: set it by hand", name, path)
	}
	if m := first(kwModel.FindSubmatch(args)); m != "" && m != defaultModel {
		a.Model = m
	}
	if sm := kwServers.FindSubmatch(args); sm != nil {
		for _, q := range quoted.FindAllSubmatch(sm[1], -1) {
			a.Servers = append(a.Servers, first(q))
		}
	}
	for _, k := range []string{"use_history", "human_input", "request_params", "instructions"} {
		if bytes.Contains(args, []byte(k+"=")) {
			note("agent %s: %s= in %s: not mapped", name, k, path)
		}
	}
}

// modulePath is the file of an agents.yaml module: a path as written when
// it ends in .py (agents/researcher.py), else a dotted Python module name
// (agents.researcher is agents/researcher.py).
func modulePath(module string) string {
	if strings.HasSuffix(module, ".py") {
		return filepath.FromSlash(module)
	}
	return filepath.FromSlash(strings.ReplaceAll(module, ".", "/")) + ".py"
}

// first is the first non-empty capture group.
func first(m [][]byte) string {
	if len(m) < 2 {
		return ""
	}
	for _, g := range m[1:] {
		if len(g) > 0 {
			return string(g)
		}
	}
	return ""
}

func str(v any) string {
	if v == nil {
		return ""
	}
	return fmt.Sprint(v)
}

func asMap(v any) map[string]any { m, _ := v.(map[string]any); return m }
func asList(v any) []any         { l, _ := v.([]any); return l }

func mapAt(m map[string]any, keys ...string) map[string]any {
	for _, k := range keys {
		m = asMap(m[k])
	}
	return m
}

// mergeSecrets adds the entries of the map v (headers or env of a server,
// which hold secrets) to into, v's winning on the same key, each value
// with its ${VAR} references defaulted to empty (envDefault) as api_key's
// are: fastagent.config.yaml and fastagent.secrets.yaml both may set some
// of a server's headers, and neither set may be lost.
func mergeSecrets(into map[string]string, v any) map[string]string {
	if into == nil {
		into = map[string]string{}
	}
	for k, x := range asMap(v) {
		into[k] = envDefault(str(x), "")
	}
	return into
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

package pallasimport

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pallasgw/pallasgw/gateway"
)

// A Pallas example project (agents.yaml,
// fastagent.config.yaml with the mcp servers of the bearer-forwarding
// example, fastagent.secrets.yaml), with fast-agent modules for its two
// agents, converts into a config that validates and keeps every port.
func TestConvertPallasExample(t *testing.T) {
	dir := t.TempDir()
	files := map[string]string{
		"agents.yaml": `name: my-project
version: "1.0.0"
host: my-host.example.com
namespace: com.example.project
registry_port: 8200

agents:
  jarvis:
    module: agents.jarvis
    port: 8201
    title: Jarvis
    description: "My assistant"
    depends_on: [research]

  research:
    module: agents.research
    port: 8250
    title: Research Agent
    description: "Web search and knowledge graph"
`,
		"fastagent.config.yaml": `default_model: openai.my-model-name

model_capabilities:
  vision: false
  context_window: 200000
  max_output_tokens: 32000

logger:
  level: info

mcp:
  servers:
    mnemosyne:
      transport: http
      url: "https://mnemosyne.example/mcp/"
      forward_inbound_auth: true
    weather:
      transport: http
      url: "https://weather.example/mcp/"
    research:
      transport: http
      url: "http://localhost:8250/mcp"
`,
		"fastagent.secrets.yaml": `anthropic:
  api_key: "${ANTHROPIC_API_KEY}"
openai:
  api_key: "${OPENAI_API_KEY}"
  base_url: "${OPENAI_BASE_URL}"
`,
		"agents/__init__.py": "",
		"agents/jarvis.py": `from fast_agent import FastAgent
fast = FastAgent("jarvis")

@fast.agent(
    name="jarvis",
    instruction="""You are Jarvis, a helpful assistant.
Use your tools.""",
    servers=["mnemosyne", "weather", "research"],
    use_history=True,
)
async def main():
    pass
`,
		"agents/research.py": `fast = FastAgent("research")

@fast.agent(name="research", instruction=INSTRUCTION, servers=["weather"], model="anthropic.claude-sonnet-4-5")
def main(): ...
`,
	}
	for name, body := range files {
		p := filepath.Join(dir, name)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	res, err := ConvertWith(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "pallasgw.yaml")
	if err := os.WriteFile(out, res.Config, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, v := range []string{"OPENAI_API_KEY", "OPENAI_BASE_URL", "ANTHROPIC_API_KEY"} {
		os.Unsetenv(v)
	}
	cfg, err := gateway.LoadConfig(out)
	if err != nil {
		t.Fatalf("the converted config does not validate: %v\n%s", err, res.Config)
	}
	j, r := cfg.Agents["jarvis"], cfg.Agents["research"]
	if j == nil || r == nil || res.Agents != 2 {
		t.Fatalf("agents %v\n%s", cfg.Agents, res.Config)
	}
	if j.Port != 8201 || r.Port != 8250 || cfg.RegistryPort != 8200 || cfg.Listen != "0.0.0.0:8202" {
		t.Errorf("ports: jarvis %d research %d registry %d listen %s", j.Port, r.Port, cfg.RegistryPort, cfg.Listen)
	}
	if j.Instruction != "You are Jarvis, a helpful assistant.\nUse your tools." || strings.Join(j.Servers, ",") != "mnemosyne,weather" ||
		strings.Join(j.Agents, ",") != "research" || j.Model != "openai.my-model-name" || j.Title != "Jarvis" {
		t.Errorf("jarvis %+v", j)
	}
	if r.Model != "anthropic.claude-sonnet-4-5" || strings.Join(r.Servers, ",") != "weather" || r.Instruction != "" {
		t.Errorf("research %+v", r)
	}
	if !cfg.MCP.Servers["mnemosyne"].ForwardInboundAuth || cfg.MCP.Servers["research"] != nil {
		t.Errorf("servers %v", cfg.MCP.Servers)
	}
	if c := cfg.Models.Capabilities["openai.my-model-name"]; c.ContextWindow != 200000 || c.MaxOutputTokens != 32000 {
		t.Errorf("capabilities %+v", c)
	}
	if cfg.Models.Providers["openai"].BaseURL != "https://api.openai.com/v1" || cfg.Namespace != "com.example.project" || cfg.Host != "my-host.example.com" {
		t.Errorf("openai %+v, namespace %q", cfg.Models.Providers["openai"], cfg.Namespace)
	}
	// The same project as agent cards: one <agent>.md each, and a config
	// whose agent_cards names their directory; it loads to the same agents.
	cres, err := ConvertWith(dir, Options{Cards: "cards"})
	if err != nil {
		t.Fatal(err)
	}
	cdir := t.TempDir()
	os.WriteFile(filepath.Join(cdir, "pallasgw.yaml"), cres.Config, 0o644)
	os.MkdirAll(filepath.Join(cdir, "cards"), 0o755)
	for name, body := range cres.Cards {
		os.WriteFile(filepath.Join(cdir, "cards", name), body, 0o644)
	}
	if len(cres.Cards) != 2 || cres.Cards["jarvis.md"] == nil || strings.Contains(string(cres.Config), "instruction") {
		t.Fatalf("cards %v, config:\n%s", len(cres.Cards), cres.Config)
	}
	ccfg, err := gateway.LoadConfig(filepath.Join(cdir, "pallasgw.yaml"))
	if err != nil {
		t.Fatalf("the config with cards does not validate: %v\n%s\n%s", err, cres.Config, cres.Cards["jarvis.md"])
	}
	for _, name := range []string{"jarvis", "research"} {
		a, b := cfg.Agents[name], ccfg.Agents[name]
		if b == nil || a.Instruction != b.Instruction || a.Port != b.Port || a.Model != b.Model || a.Title != b.Title ||
			strings.Join(a.Servers, ",") != strings.Join(b.Servers, ",") || strings.Join(a.Agents, ",") != strings.Join(b.Agents, ",") {
			t.Errorf("%s from its card = %+v, want %+v", name, b, a)
		}
	}
	report := strings.Join(res.Unmapped, "\n")
	for _, want := range []string{"fastagent.config.yaml: logger: not mapped", "agent jarvis: depends_on [research] is not needed",
		"agent jarvis: use_history= in", "agent research: instruction in", "listen: port 8200 is used by registry_port",
		"mcp.servers.research: the Pallas agent research"} {
		if !strings.Contains(report, want) {
			t.Errorf("report lacks %q:\n%s", want, report)
		}
	}
}

// A secret with an embedded reference (Bearer ${SEARCH_TOKEN}) reads an
// unset variable as empty, as api_key does, so the output loads without
// it; a module written as a path (agents/researcher.py) is read as
// written. (The server's headers come from both files, merged.)
func TestConvertEmbeddedRefsAndModulePaths(t *testing.T) {
	dir := t.TempDir()
	files := map[string]string{
		"agents.yaml": "name: p\nagents:\n  researcher: {module: agents/researcher.py, port: 24311}\n",
		"fastagent.config.yaml": `default_model: passthrough
mcp:
  servers:
    search:
      url: "https://search.example/mcp"
      headers: {X-Org: acme, X-Region: eu}
`,
		"fastagent.secrets.yaml": `mcp:
  servers:
    search:
      headers: {Authorization: "Bearer ${SEARCH_TOKEN}", X-Region: us}
`,
		"agents/researcher.py": "@fast.agent(name=\"researcher\", instruction=\"Search.\", servers=[\"search\"])\ndef main(): ...\n",
	}
	for name, body := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	res, err := ConvertWith(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "pallasgw.yaml")
	if err := os.WriteFile(out, res.Config, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, token := range []string{"", "search-token-1234"} {
		t.Setenv("SEARCH_TOKEN", token)
		if token == "" {
			os.Unsetenv("SEARCH_TOKEN")
		}
		cfg, err := gateway.LoadConfig(out)
		if err != nil {
			t.Fatalf("SEARCH_TOKEN %q: the converted config does not load: %v\n%s", token, err, res.Config)
		}
		h := cfg.MCP.Servers["search"].Headers
		if h["X-Org"].Value() != "acme" || h["X-Region"].Value() != "us" || h["Authorization"].Value() != strings.TrimSpace("Bearer "+token) { // a value's trailing space does not survive YAML
			t.Errorf("SEARCH_TOKEN %q: headers X-Org %q X-Region %q Authorization %q", token, h["X-Org"].Value(), h["X-Region"].Value(), h["Authorization"].Value())
		}
		if a := cfg.Agents["researcher"]; a == nil || a.Instruction != "Search." || strings.Join(a.Servers, ",") != "search" {
			t.Errorf("researcher %+v", a)
		}
	}
	if report := strings.Join(res.Unmapped, "\n"); strings.Contains(report, "researcher") {
		t.Errorf("report:\n%s", report)
	}
}

// A server's headers (and env) from fastagent.config.yaml and from
// fastagent.secrets.yaml are merged key by key, the secrets' winning on the
// same name: no header of either file is lost.
func TestConvertMergesServerHeaders(t *testing.T) {
	dir := t.TempDir()
	files := map[string]string{
		"agents.yaml": "name: p\nagents: {}\n",
		"fastagent.config.yaml": `default_model: passthrough
mcp:
  servers:
    search: {url: "https://search.example/mcp", headers: {X-Org: acme, X-Region: eu}}
    tool: {command: ./tool, env: {MODE: fast, LEVEL: "1"}}
`,
		"fastagent.secrets.yaml": `mcp:
  servers:
    search: {headers: {X-Api-Key: search-key-0123, X-Region: us}}
    tool: {env: {TOOL_KEY: tool-key-0123, LEVEL: "2"}}
`,
	}
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	res, err := ConvertWith(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := gateway.ParseConfig(filepath.Join(t.TempDir(), "pallasgw.yaml"), res.Config)
	if err != nil {
		t.Fatalf("the converted config does not load: %v\n%s", err, res.Config)
	}
	h := cfg.MCP.Servers["search"].Headers
	if len(h) != 3 || h["X-Org"].Value() != "acme" || h["X-Region"].Value() != "us" || h["X-Api-Key"].Value() != "search-key-0123" {
		t.Errorf("search headers:\n%s", res.Config)
	}
	env := cfg.MCP.Servers["tool"].Env
	if len(env) != 3 || env["MODE"].Value() != "fast" || env["LEVEL"].Value() != "2" || env["TOOL_KEY"].Value() != "tool-key-0123" {
		t.Errorf("tool env:\n%s", res.Config)
	}
}

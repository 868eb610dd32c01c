package pallasimport

// The pallasgw config as import writes it (field order is the file's).
type outConfig struct {
	Name         string               `yaml:"name"`
	Version      string               `yaml:"version,omitempty"`
	Namespace    string               `yaml:"namespace,omitempty"`
	Listen       string               `yaml:"listen"`
	Host         string               `yaml:"host,omitempty"`
	RegistryPort int                  `yaml:"registry_port,omitempty"`
	EnvFile      string               `yaml:"env_file,omitempty"`
	Models       outModels            `yaml:"models"`
	MCP          outMCP               `yaml:"mcp,omitempty"`
	Agents       map[string]*outAgent `yaml:"agents,omitempty"`
	AgentCards   []string             `yaml:"agent_cards,omitempty"`
}

type outModels struct {
	Default      string                  `yaml:"default"`
	Providers    map[string]*outProvider `yaml:"providers,omitempty"`
	Capabilities map[string]outCaps      `yaml:"capabilities,omitempty"`
}

type outProvider struct {
	BaseURL string `yaml:"base_url,omitempty"`
	APIKey  string `yaml:"api_key,omitempty"`
}

type outCaps struct {
	Vision          bool `yaml:"vision"`
	ContextWindow   int  `yaml:"context_window"`
	MaxOutputTokens int  `yaml:"max_output_tokens"`
}

type outMCP struct {
	Servers map[string]*outServer `yaml:"servers,omitempty"`
}

type outServer struct {
	Transport          string            `yaml:"transport"`
	URL                string            `yaml:"url,omitempty"`
	Headers            map[string]string `yaml:"headers,omitempty"`
	ForwardInboundAuth bool              `yaml:"forward_inbound_auth,omitempty"`
	Timeout            string            `yaml:"timeout,omitempty"`
	Command            string            `yaml:"command,omitempty"`
	Args               []string          `yaml:"args,omitempty"`
	Env                map[string]string `yaml:"env,omitempty"`
	Dir                string            `yaml:"dir,omitempty"`
}

type outAgent struct {
	Title       string   `yaml:"title,omitempty"`
	Description string   `yaml:"description,omitempty"`
	Port        int      `yaml:"port,omitempty"`
	Model       string   `yaml:"model,omitempty"`
	Instruction string   `yaml:"instruction,omitempty"`
	Servers     []string `yaml:"servers,omitempty"`
	Agents      []string `yaml:"agents,omitempty"`
}

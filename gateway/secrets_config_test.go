package gateway

import (
	"os"
	"strings"
	"testing"
)

// A key fused with its value by a missing space, or a value where a
// mapping was expected, never brings the value into an error: not in
// validate's, not in serve's, not in a failed reload's (its error, its
// /-/status entry).
func TestConfigErrorsNeverEchoSecrets(t *testing.T) {
	const secret = "S3CR3T-value-0042"
	for _, c := range []struct{ name, yaml string }{
		{"header fused, block", "mcp:\n  servers:\n    s:\n      url: http://127.0.0.1:1/mcp\n      headers:\n        X-Api-Key:" + secret + "\n"},
		{"header fused, with a value", "mcp:\n  servers:\n    s:\n      url: http://127.0.0.1:1/mcp\n      headers:\n        X-Api-Key:" + secret + ": v\n"},
		{"header fused, flow", "mcp:\n  servers:\n    s:\n      url: http://127.0.0.1:1/mcp\n      headers: {X-Api-Key:" + secret + "}\n"},
		{"token fused", "auth:\n  mode: tokens\n  tokens:\n    - name: web\n      token:" + secret + ": x\n"},
		{"token fused, flow", "auth:\n  mode: tokens\n  tokens:\n    - {name: web, token:" + secret + "}\n"},
		{"token as a list item", "auth:\n  mode: tokens\n  tokens:\n    - token:" + secret + "\n"},
		{"forward target taken", "mcp:\n  servers:\n    s:\n      url: http://127.0.0.1:1/mcp\n      forward_headers: {X-A:" + secret + ": Authorization, X-B: Authorization}\n"},
		{"forward target fused", "mcp:\n  servers:\n    s:\n      url: http://127.0.0.1:1/mcp\n      forward_headers: {X-A: X-Key:" + secret + "}\n"},
		{"admin token as a list", "admin:\n  token: [" + secret + "]\n"},
		{"agent name fused", "agents:\n  X-Api-Key:" + secret + ": {model: passthrough}\n"},
		{"provider fused", "models:\n  default: nope.m\n  providers:\n    p:" + secret + ": {type: openai}\n"},
		{"env as a list", "mcp:\n  servers:\n    s:\n      command: x\n      env: [TOKEN=" + secret + "]\n"},
	} {
		t.Run(c.name, func(t *testing.T) {
			cfg := "name: t\nlisten: \"127.0.0.1:0\"\n" + c.yaml
			if !strings.Contains(c.yaml, "agents:") {
				cfg += "agents:\n  a: {model: passthrough}\n"
			}
			g := newTestGateway(t, revertCfg)
			path := g.opts.ConfigPath
			if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
				t.Fatal(err)
			}
			_, verr := LoadConfig(path)
			_, serr := New(Options{ConfigPath: path, Logger: g.log, Version: "test"})
			_, rerr := g.Reload("test")
			if verr == nil || serr == nil || rerr == nil {
				t.Fatalf("loaded: validate %v, serve %v, reload %v", verr, serr, rerr)
			}
			for what, text := range map[string]string{"validate": verr.Error(), "serve": serr.Error(), "reload": rerr.Error(),
				"status": g.lastReload.Load().Error} {
				if strings.Contains(text, secret) || strings.Contains(text, "S3CR3T") {
					t.Errorf("%s's error carries the value:\n%s", what, text)
				}
			}
		})
	}
}

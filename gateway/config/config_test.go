package config

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

func TestExamplesLoad(t *testing.T) {
	files, _ := filepath.Glob("../../configs/*.yaml")
	if len(files) == 0 {
		t.Fatal("no example configs found")
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			raw, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			// Each ${VAR} without a default gets a distinct dummy value,
			// long enough for a token.
			for _, m := range requiredVar.FindAllSubmatch(raw, -1) {
				t.Setenv(string(m[1]), "dummy-"+strings.ToLower(string(m[1]))+"-0123456789")
			}
			if _, err := Load(f); err != nil {
				t.Fatalf("example does not load:\n%v", err)
			}
		})
	}
}

// requiredVar is a ${VAR} reference without a default.
var requiredVar = regexp.MustCompile(`\$\{([A-Za-z_][A-Za-z0-9_]*)\}`)

// TestBadConfigs loads every configs/testdata/*.bad.yaml; the first lines of
// each file, as "# want: <substring>", name the messages it must produce,
// "# warn: <substring>" the warnings reported with them, and "# lines: N"
// how many problems it has in all (each reported once).
func TestBadConfigs(t *testing.T) {
	files, _ := filepath.Glob("../../configs/testdata/*.bad.yaml")
	if len(files) == 0 {
		t.Fatal("no bad configs found")
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			raw, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			wants := WantLines(raw)
			if len(wants) == 0 {
				t.Fatal("file has no '# want:' lines")
			}
			_, err = Load(f)
			if err == nil {
				t.Fatal("loaded without error")
			}
			for _, w := range wants {
				w = strings.ReplaceAll(w, "FILE", f)
				if !strings.Contains(err.Error(), w) {
					t.Errorf("missing %q in:\n%v", w, err)
				}
			}
			errs := err.(*Errors)
			warnings := strings.Join(errs.Warnings, "\n")
			for _, w := range commentLines(raw, "# warn: ") {
				if w = strings.ReplaceAll(w, "FILE", f); !strings.Contains(warnings, w) {
					t.Errorf("missing warning %q in:\n%s", w, warnings)
				}
			}
			if n := commentLines(raw, "# lines: "); len(n) > 0 && n[0] != strconv.Itoa(len(errs.List)) {
				t.Errorf("%d problems, want %s:\n%v", len(errs.List), n[0], err)
			}
		})
	}
}

// commentLines are the values of the lines of raw that start with prefix.
func commentLines(raw []byte, prefix string) []string {
	var out []string
	for _, l := range strings.Split(string(raw), "\n") {
		if w, ok := strings.CutPrefix(l, prefix); ok {
			out = append(out, strings.TrimSpace(w))
		}
	}
	return out
}

// WantLines returns the "# want: " expectations at the top of a bad config.
func WantLines(raw []byte) []string {
	var out []string
	for _, l := range strings.Split(string(raw), "\n") {
		if w, ok := strings.CutPrefix(l, "# want: "); ok {
			out = append(out, strings.TrimSpace(w))
		}
	}
	return out
}

func TestExpand(t *testing.T) {
	t.Setenv("PGW_SET", "v1")
	t.Setenv("PGW_EMPTY", "")
	p := &parser{env: map[string]string{"PGW_FILE": "fromfile", "PGW_SET": "ignored"}}
	cases := []struct{ in, want, err string }{
		{"${PGW_SET}", "v1", ""},
		{"a-${PGW_SET}-b", "a-v1-b", ""},
		{"${PGW_UNSET:-dflt}", "dflt", ""},
		{"${PGW_EMPTY:-dflt}", "dflt", ""},
		{"${PGW_EMPTY}", "", ""},
		{"${PGW_FILE}", "fromfile", ""},
		{"$${PGW_SET}", "${PGW_SET}", ""},
		{"cost $5", "cost $5", ""},
		{"${PGW_UNSET}", "", "PGW_UNSET is not set"},
		{"${PGW_SET", "", "unterminated"},
		{"${1BAD}", "", "invalid variable"},
	}
	for _, c := range cases {
		t.Run(c.in, func(t *testing.T) {
			got, err := p.expandString(c.in)
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("err = %v, want %q", err, c.err)
				}
				return
			}
			if err != nil || got != c.want {
				t.Fatalf("got %q, %v; want %q", got, err, c.want)
			}
		})
	}
}

func TestDefaultsAndEnvFile(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, ".env"), []byte("# c\nexport PGW_PORT=9100\nPGW_KEY='k-123'\n"), 0o600)
	cfgPath := filepath.Join(dir, "c.yaml")
	os.WriteFile(cfgPath, []byte(`name: t
env_file: .env
listen: "127.0.0.1:${PGW_PORT}"
models:
  providers:
    openai: {api_key: "${PGW_KEY}"}
agents:
  tech_research: {port: 1${PGW_PORT:-1}, description: "${PGW_UNSET:-a, b}"}
`), 0o600)
	c, err := Load(cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	a := c.Agents["tech_research"]
	checks := map[string][2]any{
		"listen":    {c.Listen, "127.0.0.1:9100"},
		"port":      {a.Port, 19100},
		"desc":      {a.Description, "a, b"},
		"title":     {a.Title, "Tech Research"},
		"tool_name": {a.ToolName, "send_message"},
		"model":     {a.Model, "passthrough"},
		"namespace": {c.Namespace, "t"},
		"key":       {c.Models.Providers["openai"].APIKey.Value(), "k-123"},
		"base_url":  {c.Models.Providers["openai"].BaseURL, DefaultOpenAIBaseURL},
		"poll":      {c.Reload.PollInterval, DefaultPollInterval},
	}
	for k, v := range checks {
		if v[0] != v[1] {
			t.Errorf("%s = %v, want %v", k, v[0], v[1])
		}
	}
	if c.Hash == "" {
		t.Error("no hash")
	}
}

func TestSecretNeverPrints(t *testing.T) {
	s := Secret("hunter2-secret")
	for _, out := range []string{s.String(), s.GoString()} {
		if strings.Contains(out, "hunter2") {
			t.Fatalf("secret printed: %s", out)
		}
	}
	b, _ := s.MarshalJSON()
	if strings.Contains(string(b), "hunter2") {
		t.Fatal("secret in JSON")
	}
}

func TestSanitizeToolName(t *testing.T) {
	long := strings.Repeat("x", 80)
	cases := map[string]string{"argos__search": "argos__search", "a.b c": "a_b_c", "": "_"}
	for in, want := range cases {
		if got := SanitizeToolName(in); got != want {
			t.Errorf("%q -> %q, want %q", in, got, want)
		}
	}
	a, b := SanitizeToolName(long+"a"), SanitizeToolName(long+"b")
	if len(a) != 64 || a == b {
		t.Errorf("long names: %q %q", a, b)
	}
}

// yaml.v3 quotes the offending text in some of its messages, and the text
// is read after ${VAR} expansion: a secret from the environment must not
// reach validate's output, the log or /-/status through them.
func TestYAMLErrorsDoNotQuoteValues(t *testing.T) {
	for _, tc := range []struct{ name, yaml, env string }{
		{"a string where a mapping belongs", "admin: ${PGW_SECRET}\n", "hunter2xyz"},
		{"a long one, cut by yaml", "auth: {mode: tokens, tokens: [${PGW_SECRET}]}\n", "tok-secret-0123456789"},
		{"a string where a bool belongs", "mcp:\n  servers:\n    s: {url: \"http://x/mcp\", forward_inbound_auth: ${PGW_SECRET}}\n", "sk-oai-secret"},
		{"an alias", "mcp:\n  servers:\n    s: {url: \"http://x/mcp\", headers: {X-Api-Key: ${PGW_SECRET}}}\n", "*Pa55-starkey-secret"},
		{"a tag", "admin: ${PGW_SECRET}\n", "!Tagged-secret"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("PGW_SECRET", tc.env)
			_, err := Parse("pallasgw.yaml", []byte(tc.yaml))
			if err == nil {
				t.Fatal("no error")
			}
			msg := err.Error()
			t.Log(msg)
			for _, part := range []string{tc.env, strings.TrimLeft(tc.env, "*!")[:7]} {
				if strings.Contains(msg, part) {
					t.Errorf("the error quotes %q: %s", part, msg)
				}
			}
			if !strings.Contains(msg, "pallasgw.yaml") {
				t.Errorf("the error does not say where: %s", msg)
			}
		})
	}
	for in, want := range map[string]string{
		"cannot unmarshal !!str `x` into int":  "cannot unmarshal !!str (value not shown) into int",
		"did not find expected ',' or ']'":     "did not find expected ',' or ']'",
		"could not find expected ':'":          "could not find expected ':'",
		"unknown anchor 'a-secret' referenced": "unknown anchor (value not shown) referenced",
		"cannot unmarshal !own `` into string": "cannot unmarshal (value not shown) (value not shown) into string",
	} {
		if got := hideValues(in); got != want {
			t.Errorf("hideValues(%q) = %q, want %q", in, got, want)
		}
	}
	// A syntax error still says what yaml expected.
	if _, err := Parse("pallasgw.yaml", []byte("listen: [a, b\n")); err == nil || !strings.Contains(err.Error(), "',' or ']'") {
		t.Errorf("syntax error: %v", err)
	}
}

// wire.fast is on unless written false; a value that is not a boolean is
// an error placed at its line.
func TestWireFast(t *testing.T) {
	for _, c := range []struct {
		extra string
		want  bool
	}{{"", true}, {"wire: {}\n", true}, {"wire: {fast: true}\n", true}, {"wire: {fast: false}\n", false}} {
		cfg, err := Parse("t.yaml", []byte("name: t\n"+c.extra))
		if err != nil {
			t.Fatalf("%q: %v", c.extra, err)
		}
		if cfg.Wire.Fast != c.want {
			t.Errorf("%q: wire.fast = %v, want %v", c.extra, cfg.Wire.Fast, c.want)
		}
	}
	for _, bad := range []string{"wire: {fast: maybe}\n", "wire: {slow: true}\n"} {
		if _, err := Parse("t.yaml", []byte("name: t\n"+bad)); err == nil || !strings.Contains(err.Error(), "t.yaml:2:") {
			t.Errorf("%q: error %v, want one at t.yaml:2", bad, err)
		}
	}
}

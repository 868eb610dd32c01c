// Package docs checks the documentation against the repository and the
// config loader, so that neither drifts: README.md and docs/*.md link only
// to files and headings that exist, every YAML block in them that is a
// config loads as `pallasgw validate` loads it, configs/example.yaml sets
// every key the config types declare, and the files `make replicas`
// renders from the shipped nginx config still say what the docs say.
//
// What counts as a config block: a ```yaml (or ```yml) fence whose top
// level is a mapping whose every key is a top-level config key (the yaml
// tags of config.Config). Such a block is a whole config and must load,
// unless its first line is a comment starting "# Fragment", which marks a
// piece meant to go into a larger config: a fragment must still parse and
// use only top-level config keys, and is not loaded. Other YAML blocks (a
// Kubernetes manifest, an agent card's front matter) are not configs.
//
// A config block is loaded from a file pallasgw.yaml in a temporary
// directory: a pins file it names is created there empty (`servers: {}`, as
// `pallasgw pins init` leaves it for servers with no tools), an env_file
// empty, an agent_cards directory empty; each ${VAR} without a default is
// set to a dummy value 24 characters or longer (long enough for a token).
package docs

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
	"unicode"

	"go.yaml.in/yaml/v3"

	"github.com/pallasgw/pallasgw/gateway"
	"github.com/pallasgw/pallasgw/gateway/config"
)

const repo = "../.."

// docFiles are README.md and docs/*.md, relative to the repository.
func docFiles(t *testing.T) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(repo, "docs", "*.md"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no docs/*.md (%v)", err)
	}
	out := []string{"README.md"}
	for _, f := range files {
		out = append(out, filepath.ToSlash(must(filepath.Rel(repo, f))))
	}
	return out
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

func read(t *testing.T, rel string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(repo, rel))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// para is one paragraph of a Markdown file outside fenced code blocks
// (its lines joined, since a link may wrap), with its inline code spans
// blanked (a link inside `code` is not a link); n is its first line.
type para struct {
	n    int
	text string
}

var codeSpan = regexp.MustCompile("`[^`]*`")

// prose returns the paragraphs of md outside fences.
func prose(md string) []para {
	var out []para
	var cur []string
	first, fence := 0, false
	flush := func() {
		if len(cur) > 0 {
			text := strings.Join(cur, " ")
			out = append(out, para{first, codeSpan.ReplaceAllStringFunc(text, func(s string) string { return strings.Repeat(" ", len(s)) })})
			cur = nil
		}
	}
	for i, l := range strings.Split(md, "\n") {
		switch {
		case strings.HasPrefix(strings.TrimSpace(l), "```"):
			flush()
			fence = !fence
		case fence:
		case strings.TrimSpace(l) == "":
			flush()
		default:
			if cur == nil {
				first = i + 1
			}
			cur = append(cur, strings.TrimSpace(l))
		}
	}
	flush()
	return out
}

var heading = regexp.MustCompile(`^#{1,6}\s+(.*?)\s*#*\s*$`)

// anchors are the heading anchors of md as GitHub makes them: lower case,
// punctuation but '-' and '_' dropped, spaces turned into '-', and a
// repeated anchor suffixed -1, -2, ...
func anchors(md string) map[string]bool {
	out := map[string]bool{}
	fence := false
	for _, l := range strings.Split(md, "\n") {
		if strings.HasPrefix(strings.TrimSpace(l), "```") {
			fence = !fence
			continue
		}
		m := heading.FindStringSubmatch(l)
		if fence || m == nil {
			continue
		}
		a := slug(m[1])
		if out[a] {
			for i := 1; ; i++ {
				if s := fmt.Sprintf("%s-%d", a, i); !out[s] {
					a = s
					break
				}
			}
		}
		out[a] = true
	}
	return out
}

func slug(h string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(h) {
		switch {
		case r == ' ':
			b.WriteByte('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
			b.WriteRune(r)
		}
	}
	return b.String()
}

// link is [text](target) or ![alt](target); the target ends at the first
// space (a title may follow) or the closing parenthesis.
var link = regexp.MustCompile(`!?\[[^\]]*\]\(([^)\s]+)(?:\s+"[^"]*")?\)`)

// TestLinks: every relative link of README.md and docs/*.md names a file
// or directory that exists, and its #anchor a heading of the target (the
// same file when the link is only an anchor).
func TestLinks(t *testing.T) {
	problems, checked := linkProblems(repo, docFiles(t))
	for _, p := range problems {
		t.Error(p)
	}
	if checked < 50 {
		t.Errorf("only %d relative links found: is the link pattern still right?", checked)
	}
	t.Logf("%d relative links checked", checked)
}

// TestLinkProblems: the link check finds a missing file, a missing anchor
// and an anchor into a file that is not Markdown, also in a link that
// wraps, and nothing in a code span or block.
func TestLinkProblems(t *testing.T) {
	root := t.TempDir()
	writeFile(t, filepath.Join(root, "README.md"), "# Top\n\n## A section\n\n"+
		"[ok](docs/b.md#b-heading) [self](#a-section) [dir](docs) [web](https://example.com/x)\n"+
		"[gone](docs/missing.md) [no anchor](docs/b.md#nowhere) [text anchor](notes.txt#x)\n"+
		"`[in code](nowhere.md)`\n\n```\n[in a block](nowhere.md)\n```\n\na [wrapped\nlink](docs/b.md#wrapped)\n")
	writeFile(t, filepath.Join(root, "docs", "b.md"), "# B heading\n\n[back](../README.md#top)\n")
	writeFile(t, filepath.Join(root, "notes.txt"), "")
	problems, checked := linkProblems(root, []string{"README.md", "docs/b.md"})
	if checked != 8 {
		t.Errorf("checked %d links, want 8", checked)
	}
	want := []string{"docs/missing.md does not exist", "no heading with the anchor #nowhere", "not Markdown", "no heading with the anchor #wrapped"}
	if len(problems) != len(want) {
		t.Fatalf("problems = %q, want %d", problems, len(want))
	}
	for i, w := range want {
		if !strings.Contains(problems[i], w) {
			t.Errorf("problem %d = %q, want it to say %q", i, problems[i], w)
		}
	}
}

// linkProblems checks the relative links of files (relative to root) and
// says how many it checked.
func linkProblems(root string, files []string) (problems []string, checked int) {
	for _, f := range files {
		md, err := os.ReadFile(filepath.Join(root, f))
		if err != nil {
			problems = append(problems, err.Error())
			continue
		}
		for _, l := range prose(string(md)) {
			for _, m := range link.FindAllStringSubmatch(l.text, -1) {
				target := m[1]
				if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
					continue
				}
				checked++
				path, anchor, _ := strings.Cut(target, "#")
				dest := f
				if path != "" {
					dest = filepath.ToSlash(filepath.Join(filepath.Dir(f), path))
					if _, err := os.Stat(filepath.Join(root, dest)); err != nil {
						problems = append(problems, fmt.Sprintf("%s:%d: link %q: %s does not exist", f, l.n, target, dest))
						continue
					}
				}
				if anchor == "" {
					continue
				}
				if !strings.HasSuffix(dest, ".md") {
					problems = append(problems, fmt.Sprintf("%s:%d: link %q: an anchor into a file that is not Markdown", f, l.n, target))
					continue
				}
				text, err := os.ReadFile(filepath.Join(root, dest))
				if err != nil || !anchors(string(text))[anchor] {
					problems = append(problems, fmt.Sprintf("%s:%d: link %q: %s has no heading with the anchor #%s", f, l.n, target, dest, anchor))
				}
			}
		}
	}
	return problems, checked
}

// TestReadmeMapsEveryDoc: the README is the map of the documents, so it
// links to each of docs/*.md; it names the test command and the
// quickstart config. No document cites what lives outside the repository.
func TestReadmeMapsEveryDoc(t *testing.T) {
	readme := read(t, "README.md")
	for _, f := range docFiles(t)[1:] {
		if !strings.Contains(readme, "]("+f) {
			t.Errorf("README.md does not link to %s", f)
		}
	}
	for _, s := range []string{"make test", "configs/quickstart.yaml"} {
		if !strings.Contains(readme, s) {
			t.Errorf("README.md does not name %q", s)
		}
	}
	outside := regexp.MustCompile(`\.\./shared|\bSPEC\b|\bseeds\b`)
	for _, f := range docFiles(t) {
		for i, l := range strings.Split(read(t, f), "\n") {
			if m := outside.FindString(l); m != "" {
				t.Errorf("%s:%d: cites %q, which is not part of the repository's documentation", f, i+1, m)
			}
		}
	}
}

// block is one fenced YAML block of a document.
type block struct {
	file string
	line int // of its first line
	text string
}

var fenceOpen = regexp.MustCompile("^```(ya?ml)\\s*$")

func yamlBlocks(t *testing.T, f string) []block {
	var out []block
	var cur *block
	for i, l := range strings.Split(read(t, f), "\n") {
		switch {
		case cur == nil && fenceOpen.MatchString(strings.TrimSpace(l)):
			cur = &block{file: f, line: i + 2}
		case cur != nil && strings.TrimSpace(l) == "```":
			out = append(out, *cur)
			cur = nil
		case cur != nil:
			cur.text += l + "\n"
		}
	}
	return out
}

// topKeys are config.Config's top-level keys.
func topKeys() map[string]bool {
	out := map[string]bool{}
	typ := reflect.TypeFor[config.Config]()
	for i := range typ.NumField() {
		if k := yamlKey(typ.Field(i)); k != "" {
			out[k] = true
		}
	}
	return out
}

func yamlKey(f reflect.StructField) string {
	if !f.IsExported() {
		return ""
	}
	k, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
	if k == "-" {
		return ""
	}
	return k
}

var requiredVar = regexp.MustCompile(`\$\{([A-Za-z_][A-Za-z0-9_]*)\}`)

// loadConfig loads text as the file pallasgw.yaml of a fresh directory, as
// `pallasgw validate` does, with the files it names created empty.
func loadConfig(t *testing.T, text string) error {
	t.Helper()
	dir := t.TempDir()
	var top struct {
		Pins       string   `yaml:"pins"`
		EnvFile    string   `yaml:"env_file"`
		AgentCards []string `yaml:"agent_cards"`
	}
	_ = yaml.Unmarshal([]byte(text), &top) // a broken block fails to load below
	if top.Pins != "" {
		writeFile(t, filepath.Join(dir, top.Pins), "servers: {}\n")
	}
	if top.EnvFile != "" {
		writeFile(t, filepath.Join(dir, top.EnvFile), "")
	}
	for _, d := range top.AgentCards {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, m := range requiredVar.FindAllStringSubmatch(text, -1) {
		v := "docs-" + strings.ToLower(m[1]) + "-0123456789abcdef"
		if strings.HasSuffix(m[1], "STATE_KEY") || strings.HasSuffix(m[1], "CREDENTIALS_KEY") { // 32 bytes in base64
			v = base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{7}, 32))
		}
		t.Setenv(m[1], v)
	}
	path := filepath.Join(dir, "pallasgw.yaml")
	writeFile(t, path, text)
	cfg, err := gateway.LoadConfig(path)
	if err != nil {
		return err
	}
	if len(cfg.Warnings) > 0 {
		return fmt.Errorf("warnings:\n%s", strings.Join(cfg.Warnings, "\n"))
	}
	return nil
}

func writeFile(t *testing.T, path, text string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
}

// TestConfigBlocks: every YAML block of the documents that is a config
// loads (see the package comment for the rule and the fragment mark).
func TestConfigBlocks(t *testing.T) {
	keys := topKeys()
	whole, fragments := 0, 0
	for _, f := range docFiles(t) {
		for _, b := range yamlBlocks(t, f) {
			name := fmt.Sprintf("%s:%d", b.file, b.line)
			var doc yaml.Node
			if err := yaml.Unmarshal([]byte(b.text), &doc); err != nil {
				t.Errorf("%s: not YAML: %v", name, err)
				continue
			}
			if len(doc.Content) == 0 || doc.Content[0].Kind != yaml.MappingNode {
				continue
			}
			var top []string
			for i := 0; i < len(doc.Content[0].Content); i += 2 {
				top = append(top, doc.Content[0].Content[i].Value)
			}
			if !slices.ContainsFunc(top, func(k string) bool { return keys[k] }) {
				continue // not a config (a manifest, a card's front matter)
			}
			for _, k := range top {
				if !keys[k] {
					t.Errorf("%s: %q is not a top-level config key", name, k)
				}
			}
			if strings.HasPrefix(b.text, "# Fragment") {
				fragments++
				continue
			}
			whole++
			t.Run(strings.ReplaceAll(name, "/", "_"), func(t *testing.T) {
				if err := loadConfig(t, b.text); err != nil {
					t.Errorf("%s: the block does not load (make it whole, or mark it \"# Fragment ...\" on its first line):\n%v", name, err)
				}
			})
		}
	}
	t.Logf("%d whole configs loaded, %d fragments", whole, fragments)
	if whole == 0 {
		t.Error("no whole config block found: is the rule still right?")
	}
}

// TestReplicasConfig: the config `make replicas` runs loads.
func TestReplicasConfig(t *testing.T) {
	if err := loadConfig(t, read(t, "configs/replicas/pallasgw.yaml")); err != nil {
		t.Fatal(err)
	}
}

// keyPaths are the key paths the config types declare: a.b for a field b of
// section a, a.*.b for a field of a map's values (agents.*.model), a[].b
// for a field of a list's items (auth.tokens[].name).
func keyPaths(typ reflect.Type, prefix string, out map[string]bool) {
	for i := range typ.NumField() {
		k := yamlKey(typ.Field(i))
		if k == "" {
			continue
		}
		p := prefix + k
		out[p] = true
		ft := typ.Field(i).Type
		for ft.Kind() == reflect.Pointer {
			ft = ft.Elem()
		}
		switch {
		case isSection(ft):
			keyPaths(ft, p+".", out)
		case ft.Kind() == reflect.Map && isSection(deref(ft.Elem())):
			keyPaths(deref(ft.Elem()), p+".*.", out)
		case ft.Kind() == reflect.Slice && isSection(deref(ft.Elem())):
			keyPaths(deref(ft.Elem()), p+"[].", out)
		}
	}
}

func deref(t reflect.Type) reflect.Type {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return t
}

// isSection: a struct of the config package (time.Duration and the like
// are values, not sections).
func isSection(t reflect.Type) bool {
	return t.Kind() == reflect.Struct && t.PkgPath() == reflect.TypeFor[config.Config]().PkgPath()
}

// present collects the key paths n sets, walking it along typ.
func present(n *yaml.Node, typ reflect.Type, prefix string, out map[string]bool) {
	typ = deref(typ)
	switch {
	case n.Kind == yaml.MappingNode && isSection(typ):
		fields := map[string]reflect.Type{}
		for i := range typ.NumField() {
			if k := yamlKey(typ.Field(i)); k != "" {
				fields[k] = typ.Field(i).Type
			}
		}
		for i := 0; i+1 < len(n.Content); i += 2 {
			k := n.Content[i].Value
			ft, ok := fields[k]
			if !ok {
				continue
			}
			out[prefix+k] = true
			ft = deref(ft)
			switch {
			case ft.Kind() == reflect.Map && isSection(deref(ft.Elem())):
				if m := n.Content[i+1]; m.Kind == yaml.MappingNode {
					for j := 1; j < len(m.Content); j += 2 {
						present(m.Content[j], ft.Elem(), prefix+k+".*.", out)
					}
				}
			case ft.Kind() == reflect.Slice && isSection(deref(ft.Elem())):
				if s := n.Content[i+1]; s.Kind == yaml.SequenceNode {
					for _, item := range s.Content {
						present(item, ft.Elem(), prefix+k+"[].", out)
					}
				}
			default:
				present(n.Content[i+1], ft, prefix+k+".", out)
			}
		}
	}
}

// TestExampleSetsEveryKey: configs/example.yaml, which says it shows every
// section, loads without a warning and sets every key the config types
// declare (derived from their yaml tags, so a new key fails this test
// until the example shows it).
func TestExampleSetsEveryKey(t *testing.T) {
	raw := read(t, "configs/example.yaml")
	if err := loadConfig(t, raw); err != nil {
		t.Fatalf("configs/example.yaml does not load:\n%v", err)
	}
	want := map[string]bool{}
	keyPaths(reflect.TypeFor[config.Config](), "", want)
	var doc yaml.Node
	if err := yaml.Unmarshal([]byte(raw), &doc); err != nil {
		t.Fatal(err)
	}
	got := map[string]bool{}
	present(doc.Content[0], reflect.TypeFor[config.Config](), "", got)
	var missing []string
	for k := range want {
		// The default rule applies to the callers no rule names: a match
		// there selects nothing, so the example need not show one.
		if !got[k] && k != "policy.default.match" {
			missing = append(missing, k)
		}
	}
	slices.Sort(missing)
	if len(missing) > 0 {
		t.Errorf("configs/example.yaml does not set %d keys of the config:\n  %s", len(missing), strings.Join(missing, "\n  "))
	}
	if len(want) < 100 {
		t.Errorf("only %d key paths derived from config.Config: is the walk still right?", len(want))
	}
	t.Logf("%d key paths, %d not set", len(want), len(missing))
}

// TestSlug pins the anchor rule on headings of these documents.
func TestSlug(t *testing.T) {
	for h, want := range map[string]string{
		"Admin: /-/status, /-/reload, pprof":          "admin--status--reload-pprof",
		"Input-required results (2026-07-28 callers)": "input-required-results-2026-07-28-callers",
		"Browsers (CORS)":                             "browsers-cors",
		"Scaling out":                                 "scaling-out",
	} {
		if got := slug(h); got != want {
			t.Errorf("slug(%q) = %q, want %q", h, got, want)
		}
	}
	if a := anchors("# A\n```\n# not a heading\n```\n## A\n"); !a["a"] || !a["a-1"] || a["not-a-heading"] {
		t.Errorf("anchors = %v", a)
	}
}

// TestReplicasRender: the nginx files `make replicas` renders from the
// shipped configs/nginx/pallasgw.conf listen where the recipe says, name
// the three replicas and keep the shipped retries; nginx -t accepts them
// when nginx is installed.
func TestReplicasRender(t *testing.T) {
	dir := t.TempDir()
	cmd := exec.Command("bash", filepath.Join(repo, "configs/replicas/replicas.sh"), "render")
	cmd.Env = append(os.Environ(), "RUN_DIR="+dir, "PALLASGW_REPLICAS_PORT=18300")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("replicas.sh render: %v\n%s", err, out)
	}
	site := string(must(os.ReadFile(filepath.Join(dir, "site.conf"))))
	for _, want := range []string{
		"listen 127.0.0.1:18300;",
		"server 127.0.0.1:18301 max_fails=0;\n    server 127.0.0.1:18302 max_fails=0;\n    server 127.0.0.1:18303 max_fails=0;",
		"proxy_pass http://pallasgw;",
		"proxy_next_upstream error timeout http_502 http_503 non_idempotent;",
	} {
		if !strings.Contains(site, want) {
			t.Errorf("site.conf lacks %q:\n%s", want, site)
		}
	}
	for _, gone := range []*regexp.Regexp{
		regexp.MustCompile(`(?m)^\s*listen\s+(\[::\]:)?80;`),
		regexp.MustCompile(`(?m)^\s*#?\s*server\s+127\.0\.0\.1:82\d\d\b`),
	} {
		if m := gone.FindString(site); m != "" {
			t.Errorf("site.conf still has %q (the shipped file changed: update the rendering in replicas.sh)", m)
		}
	}
	main := string(must(os.ReadFile(filepath.Join(dir, "nginx.conf"))))
	if !strings.Contains(main, "include "+filepath.Join(dir, "site.conf")+";") || !strings.Contains(main, "pid "+filepath.Join(dir, "nginx.pid")+";") {
		t.Errorf("nginx.conf does not keep its files in the run directory:\n%s", main)
	}
	nginx, err := exec.LookPath("nginx")
	if err != nil {
		if _, err := os.Stat("/usr/sbin/nginx"); err != nil {
			t.Log("nginx not installed: nginx -t skipped")
			return
		}
		nginx = "/usr/sbin/nginx"
	}
	if out, err := exec.Command(nginx, "-t", "-q", "-p", dir, "-e", filepath.Join(dir, "error.log"), "-c", filepath.Join(dir, "nginx.conf")).CombinedOutput(); err != nil {
		t.Errorf("nginx -t: %v\n%s", err, out)
	}
}

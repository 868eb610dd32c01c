// Package manifests checks the deployment material in configs/ against
// itself and against the gateway: the Kubernetes manifests agree on ports,
// labels, probes and the config mount, the configs they carry pass the real
// config loader, the Dockerfile, docker-compose.yml and the proxy configs
// point at the same paths and ports, and the alert rules and the Grafana
// dashboard only use metric names the gateway exports. It needs no external
// program (the e2e tests run nginx, Caddy, Prometheus and docker-compose).
package manifests

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/pallasgw/pallasgw/gateway"
	"github.com/pallasgw/pallasgw/gateway/config"
	"github.com/pallasgw/pallasgw/metrics"
)

const repo = "../.."

// obj is one decoded YAML document.
type obj = map[string]any

// dig walks maps (string keys) and lists (int keys); nil when absent.
func dig(v any, keys ...any) any {
	for _, k := range keys {
		switch k := k.(type) {
		case string:
			m, ok := v.(obj)
			if !ok {
				return nil
			}
			v = m[k]
		case int:
			l, ok := v.([]any)
			if !ok || k >= len(l) {
				return nil
			}
			v = l[k]
		}
	}
	return v
}

func str(v any) string {
	s, _ := v.(string)
	return s
}

func list(v any) []any {
	l, _ := v.([]any)
	return l
}

func readFile(t *testing.T, rel string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(repo, filepath.FromSlash(rel)))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// decodeAll decodes every document of a YAML stream.
func decodeAll(t *testing.T, name string, b []byte) []obj {
	t.Helper()
	dec := yaml.NewDecoder(bytes.NewReader(b))
	var out []obj
	for {
		var doc obj
		err := dec.Decode(&doc)
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if doc != nil {
			out = append(out, doc)
		}
	}
}

// k8s is every object under configs/kubernetes, by kind (one of each).
type k8s struct {
	files   []string
	byKind  map[string]obj
	kustom  obj
	deploy  obj
	pod     obj // the Deployment's pod template spec
	ctr     obj // its pallasgw container
	ctrPort int
}

func loadK8s(t *testing.T) *k8s {
	t.Helper()
	dir := filepath.Join(repo, "configs", "kubernetes")
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	k := &k8s{byKind: map[string]obj{}}
	for _, e := range entries {
		if e.IsDir() || !(strings.HasSuffix(e.Name(), ".yaml") || strings.HasSuffix(e.Name(), ".yml")) {
			continue
		}
		for _, doc := range decodeAll(t, e.Name(), readFile(t, "configs/kubernetes/"+e.Name())) {
			kind := str(doc["kind"])
			if kind == "" || str(doc["apiVersion"]) == "" {
				t.Fatalf("%s: a document without kind or apiVersion", e.Name())
			}
			if kind == "Kustomization" {
				k.kustom = doc
				continue
			}
			k.files = append(k.files, e.Name())
			if k.byKind[kind] != nil {
				t.Fatalf("%s: a second %s; this test expects one of each kind", e.Name(), kind)
			}
			k.byKind[kind] = doc
		}
	}
	for _, kind := range []string{"Deployment", "Service", "ConfigMap", "PodDisruptionBudget", "HorizontalPodAutoscaler", "ServiceMonitor"} {
		if k.byKind[kind] == nil {
			t.Fatalf("configs/kubernetes has no %s", kind)
		}
	}
	k.deploy = k.byKind["Deployment"]
	k.pod, _ = dig(k.deploy, "spec", "template", "spec").(obj)
	for _, c := range list(dig(k.pod, "containers")) {
		if str(dig(c, "name")) == "pallasgw" {
			k.ctr, _ = c.(obj)
		}
	}
	if k.ctr == nil {
		t.Fatal("the Deployment has no container named pallasgw")
	}
	k.ctrPort = k.port(t, "http")
	return k
}

// port resolves a container port by name or number ("http" or 8200).
func (k *k8s) port(t *testing.T, ref any) int {
	t.Helper()
	for _, p := range list(k.ctr["ports"]) {
		n, _ := dig(p, "containerPort").(int)
		if str(dig(p, "name")) == fmt.Sprint(ref) || fmt.Sprint(n) == fmt.Sprint(ref) {
			return n
		}
	}
	t.Fatalf("the pallasgw container has no port %v", ref)
	return 0
}

func (k *k8s) podLabels() obj {
	l, _ := dig(k.deploy, "spec", "template", "metadata", "labels").(obj)
	return l
}

// selects reports whether every selector label is among labels.
func selects(selector any, labels obj) bool {
	sel, ok := selector.(obj)
	if !ok || len(sel) == 0 {
		return false
	}
	for key, v := range sel {
		if labels[key] != v {
			return false
		}
	}
	return true
}

// configArg is the --config path of the container's command line.
func (k *k8s) configArg(t *testing.T) string {
	t.Helper()
	var args []string
	for _, a := range append(list(k.ctr["command"]), list(k.ctr["args"])...) {
		args = append(args, str(a))
	}
	for i, a := range args {
		if a == "--config" && i+1 < len(args) {
			return args[i+1]
		}
		if v, ok := strings.CutPrefix(a, "--config="); ok {
			return v
		}
	}
	t.Fatalf("the pallasgw container's args carry no --config: %q", args)
	return ""
}

func TestKubernetes(t *testing.T) {
	k := loadK8s(t)
	cm := k.byKind["ConfigMap"]
	svc := k.byKind["Service"]

	t.Run("kustomization lists every manifest", func(t *testing.T) {
		if k.kustom == nil {
			t.Fatal("no kustomization.yaml")
		}
		var res []string
		for _, r := range list(k.kustom["resources"]) {
			res = append(res, str(r))
		}
		want := slices.Clone(k.files)
		sort.Strings(res)
		sort.Strings(want)
		if !slices.Equal(res, want) {
			t.Errorf("kustomization resources %q, want the manifests %q", res, want)
		}
	})

	t.Run("deployment", func(t *testing.T) {
		if r, _ := dig(k.deploy, "spec", "replicas").(int); r != 3 {
			t.Errorf("replicas %d, want 3", r)
		}
		if !selects(dig(k.deploy, "spec", "selector", "matchLabels"), k.podLabels()) {
			t.Errorf("the Deployment's selector does not match its pod labels %v", k.podLabels())
		}
		if k.ctrPort != 8200 {
			t.Errorf("container port http is %d, want 8200", k.ctrPort)
		}
		for _, c := range []struct{ probe, path string }{{"readinessProbe", "/readyz"}, {"livenessProbe", "/healthz"}} {
			if p := str(dig(k.ctr, c.probe, "httpGet", "path")); p != c.path {
				t.Errorf("%s path %q, want %q", c.probe, p, c.path)
			}
			if p := k.port(t, dig(k.ctr, c.probe, "httpGet", "port")); p != k.ctrPort {
				t.Errorf("%s port %d, want the gateway's %d", c.probe, p, k.ctrPort)
			}
		}
		if dig(k.ctr, "resources", "requests", "cpu") == nil || dig(k.ctr, "resources", "limits", "memory") == nil {
			t.Error("the container needs resources.requests.cpu (for the HPA) and resources.limits.memory")
		}
		if dig(k.ctr, "securityContext", "readOnlyRootFilesystem") != true {
			t.Error("securityContext.readOnlyRootFilesystem must be true")
		}
		nonRoot := dig(k.ctr, "securityContext", "runAsNonRoot") == true || dig(k.pod, "securityContext", "runAsNonRoot") == true
		if !nonRoot {
			t.Error("runAsNonRoot must be true")
		}
		if uid, _ := dig(k.pod, "securityContext", "runAsUser").(int); uid == 0 {
			t.Error("pod securityContext.runAsUser must be set and not 0 (the image's user is 65532)")
		}
	})

	t.Run("service targets the container port", func(t *testing.T) {
		if !selects(dig(svc, "spec", "selector"), k.podLabels()) {
			t.Errorf("the Service's selector %v does not match the pod labels %v", dig(svc, "spec", "selector"), k.podLabels())
		}
		found := false
		for _, p := range list(dig(svc, "spec", "ports")) {
			if str(dig(p, "name")) != "http" {
				continue
			}
			found = true
			if port, _ := dig(p, "port").(int); port != 8200 {
				t.Errorf("service port http is %d, want 8200", port)
			}
			if tp := k.port(t, dig(p, "targetPort")); tp != k.ctrPort {
				t.Errorf("service targetPort resolves to %d, want the container's %d", tp, k.ctrPort)
			}
		}
		if !found {
			t.Error("the Service has no port named http")
		}
	})

	var cfg *config.Config
	t.Run("configmap mounted as a directory and loadable", func(t *testing.T) {
		cfgPath := k.configArg(t)
		dir, key := path.Dir(cfgPath), path.Base(cfgPath)
		var mount obj
		for _, m := range list(k.ctr["volumeMounts"]) {
			if str(dig(m, "mountPath")) == dir {
				mount, _ = m.(obj)
			}
		}
		if mount == nil {
			t.Fatalf("no volumeMount at %s, the directory of --config %s", dir, cfgPath)
		}
		if mount["subPath"] != nil || mount["subPathExpr"] != nil {
			t.Errorf("the config volume is mounted with subPath: such mounts never see ConfigMap updates")
		}
		var vol obj
		for _, v := range list(dig(k.pod, "volumes")) {
			if str(dig(v, "name")) == str(mount["name"]) {
				vol, _ = v.(obj)
			}
		}
		if vol == nil || dig(vol, "configMap") == nil {
			t.Fatalf("volume %q is not a configMap volume", str(mount["name"]))
		}
		if name := str(dig(vol, "configMap", "name")); name != str(dig(cm, "metadata", "name")) {
			t.Errorf("the config volume uses ConfigMap %q, the manifest defines %q", name, str(dig(cm, "metadata", "name")))
		}
		if items := list(dig(vol, "configMap", "items")); items != nil {
			t.Errorf("the config volume projects items %v; mount the whole ConfigMap", items)
		}
		content, ok := dig(cm, "data", key).(string)
		if !ok {
			t.Fatalf("ConfigMap has no key %q (the file named by --config %s)", key, cfgPath)
		}
		cfg = loadConfig(t, key, content)
		host, port, err := net.SplitHostPort(cfg.Listen)
		if err != nil {
			t.Fatalf("listen %q: %v", cfg.Listen, err)
		}
		if p, _ := strconv.Atoi(port); p != k.ctrPort {
			t.Errorf("config listens on %s, the container port is %d", cfg.Listen, k.ctrPort)
		}
		if ip := net.ParseIP(host); host == "localhost" || (ip != nil && ip.IsLoopback()) {
			t.Errorf("config listens on %s: loopback is unreachable for probes and the Service", cfg.Listen)
		}
	})

	t.Run("graceful shutdown fits the grace period", func(t *testing.T) {
		if cfg == nil {
			t.Skip("config did not load")
		}
		grace, ok := dig(k.pod, "terminationGracePeriodSeconds").(int)
		if !ok {
			t.Fatal("terminationGracePeriodSeconds is not set (default 30s)")
		}
		preStop := dig(k.ctr, "lifecycle", "preStop")
		if preStop == nil {
			t.Fatal("no preStop hook: endpoints would still route to a pod that got SIGTERM")
		}
		sleep, _ := dig(preStop, "sleep", "seconds").(int)
		if sleep == 0 && dig(preStop, "exec") == nil {
			t.Errorf("preStop %v neither sleeps nor runs a command", preStop)
		}
		need := cfg.DrainDelay.Seconds() + cfg.ShutdownTimeout.Seconds() + float64(sleep)
		if float64(grace) <= need {
			t.Errorf("terminationGracePeriodSeconds %d must exceed preStop %ds + drain_delay %s + shutdown_timeout %s",
				grace, sleep, cfg.DrainDelay, cfg.ShutdownTimeout)
		}
	})

	t.Run("pdb hpa servicemonitor", func(t *testing.T) {
		pdb := k.byKind["PodDisruptionBudget"]
		if !selects(dig(pdb, "spec", "selector", "matchLabels"), k.podLabels()) {
			t.Errorf("PDB selector %v does not match the pod labels", dig(pdb, "spec", "selector", "matchLabels"))
		}
		replicas, _ := dig(k.deploy, "spec", "replicas").(int)
		if m, ok := dig(pdb, "spec", "minAvailable").(int); ok && m >= replicas {
			t.Errorf("PDB minAvailable %d blocks every eviction with %d replicas", m, replicas)
		}

		hpa := k.byKind["HorizontalPodAutoscaler"]
		if v := str(hpa["apiVersion"]); v != "autoscaling/v2" {
			t.Errorf("HPA apiVersion %q, want autoscaling/v2", v)
		}
		ref := dig(hpa, "spec", "scaleTargetRef")
		if str(dig(ref, "kind")) != "Deployment" || str(dig(ref, "name")) != str(dig(k.deploy, "metadata", "name")) || str(dig(ref, "apiVersion")) != "apps/v1" {
			t.Errorf("HPA scaleTargetRef %v does not name the Deployment", ref)
		}
		cpu := false
		for _, m := range list(dig(hpa, "spec", "metrics")) {
			cpu = cpu || str(dig(m, "resource", "name")) == "cpu"
		}
		if !cpu {
			t.Error("HPA does not scale on cpu")
		}
		if lo, _ := dig(hpa, "spec", "minReplicas").(int); lo < 2 {
			t.Errorf("HPA minReplicas %d: the PDB needs at least 2", lo)
		}

		sm := k.byKind["ServiceMonitor"]
		if v := str(sm["apiVersion"]); v != "monitoring.coreos.com/v1" {
			t.Errorf("ServiceMonitor apiVersion %q", v)
		}
		svcLabels, _ := dig(svc, "metadata", "labels").(obj)
		if !selects(dig(sm, "spec", "selector", "matchLabels"), svcLabels) {
			t.Errorf("ServiceMonitor selector %v does not match the Service labels %v", dig(sm, "spec", "selector", "matchLabels"), svcLabels)
		}
		eps := list(dig(sm, "spec", "endpoints"))
		if len(eps) == 0 {
			t.Fatal("ServiceMonitor has no endpoints")
		}
		for _, ep := range eps {
			if p := str(dig(ep, "port")); p != "http" {
				t.Errorf("ServiceMonitor endpoint port %q, want the Service port name http", p)
			}
			if p := str(dig(ep, "path")); p != "/metrics" {
				t.Errorf("ServiceMonitor endpoint path %q, want /metrics", p)
			}
		}
	})
}

// loadConfig runs the gateway's own loader (the one `pallasgw validate` and
// `serve` use) on content written to a temp file.
func loadConfig(t *testing.T, name, content string) *config.Config {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := gateway.LoadConfig(p)
	if err != nil {
		var ce *config.Errors
		if errors.As(err, &ce) {
			for _, e := range ce.List {
				t.Errorf("%s: %v", name, e)
			}
			t.FailNow()
		}
		t.Fatalf("%s: %v", name, err)
	}
	return cfg
}

// dockerEntrypoint is the exec-form ENTRYPOINT of the Dockerfile.
func dockerEntrypoint(t *testing.T) []string {
	t.Helper()
	m := regexp.MustCompile(`(?m)^ENTRYPOINT\s+(\[.*\])\s*$`).FindAllSubmatch(readFile(t, "Dockerfile"), -1)
	if len(m) != 1 {
		t.Fatalf("Dockerfile: want exactly one exec-form ENTRYPOINT, found %d", len(m))
	}
	var ep []string
	if err := json.Unmarshal(m[0][1], &ep); err != nil {
		t.Fatalf("Dockerfile ENTRYPOINT: %v", err)
	}
	return ep
}

func TestDockerfile(t *testing.T) {
	df := string(readFile(t, "Dockerfile"))
	ep := dockerEntrypoint(t)
	if want := []string{"serve", "--config", "/etc/pallasgw/pallasgw.yaml"}; len(ep) < 4 || !slices.Equal(ep[1:4], want) {
		t.Errorf("ENTRYPOINT %q, want <binary> %q", ep, want)
	}
	for _, re := range []string{`(?m)^USER 65532(:65532)?$`, `(?m)^EXPOSE 8200$`, `CGO_ENABLED=0`, `-trimpath`, `(?m)^FROM golang:1\.26\b`} {
		if !regexp.MustCompile(re).MatchString(df) {
			t.Errorf("Dockerfile does not match %s", re)
		}
	}
	k := loadK8s(t)
	if cmd := list(k.ctr["command"]); len(cmd) > 0 && str(cmd[0]) != ep[0] {
		t.Errorf("the Deployment runs %q, the image has %q", str(cmd[0]), ep[0])
	}
	if cfg := k.configArg(t); cfg != ep[3] {
		t.Errorf("the Deployment's --config %s differs from the image's %s", cfg, ep[3])
	}
}

func TestCompose(t *testing.T) {
	cfg := loadConfig(t, "pallasgw.yaml", string(readFile(t, "configs/compose/pallasgw.yaml")))
	docs := decodeAll(t, "docker-compose.yml", readFile(t, "docker-compose.yml"))
	if len(docs) != 1 {
		t.Fatalf("docker-compose.yml: %d documents", len(docs))
	}
	services, _ := docs[0]["services"].(obj)
	for _, s := range []string{"gateway", "caddy", "prometheus"} {
		if services[s] == nil {
			t.Fatalf("docker-compose.yml has no service %q", s)
		}
	}
	_, port, _ := net.SplitHostPort(cfg.Listen)

	t.Run("gateway mounts the config directory", func(t *testing.T) {
		ep := dockerEntrypoint(t)
		dir := path.Dir(ep[3])
		found := false
		for _, v := range list(dig(services, "gateway", "volumes")) {
			parts := strings.Split(str(v), ":")
			if len(parts) >= 2 && parts[1] == dir {
				found = true
				if path.Clean(parts[0]) != "configs/compose" {
					t.Errorf("%s is mounted from %s, want ./configs/compose", dir, parts[0])
				}
			}
			if len(parts) >= 2 && strings.HasPrefix(parts[1], dir+"/") {
				t.Errorf("volume %q mounts a single file: the gateway would not see edits", str(v))
			}
		}
		if !found {
			t.Errorf("the gateway service does not mount a directory at %s (the image's --config %s)", dir, ep[3])
		}
		if str(dig(services, "gateway", "build")) != "." {
			t.Errorf("the gateway service is not built from the Dockerfile (build: .)")
		}
	})

	t.Run("caddy is trusted and points at the gateway", func(t *testing.T) {
		caddyIP := str(dig(services, "caddy", "networks", "pallasgw", "ipv4_address"))
		if caddyIP == "" {
			t.Fatal("caddy has no fixed ipv4_address on the pallasgw network")
		}
		trusted := false
		for _, c := range cfg.TrustedProxies {
			_, n, err := net.ParseCIDR(c)
			trusted = trusted || c == caddyIP || (err == nil && n.Contains(net.ParseIP(caddyIP)))
		}
		if !trusted {
			t.Errorf("trusted_proxies %q does not include Caddy's %s", cfg.TrustedProxies, caddyIP)
		}
		mountedCaddyfile := false
		for _, v := range list(dig(services, "caddy", "volumes")) {
			mountedCaddyfile = mountedCaddyfile || strings.HasPrefix(str(v), "./configs/caddy/Caddyfile.compose:")
		}
		if !mountedCaddyfile {
			t.Error("caddy does not mount configs/caddy/Caddyfile.compose")
		}
		cf := string(readFile(t, "configs/caddy/Caddyfile.compose"))
		if !regexp.MustCompile(`reverse_proxy\s+gateway:` + port + `\b`).MatchString(cf) {
			t.Errorf("Caddyfile.compose does not reverse_proxy to gateway:%s", port)
		}
		if !regexp.MustCompile(`flush_interval\s+-1\b`).MatchString(cf) {
			t.Error("Caddyfile.compose lacks flush_interval -1")
		}
	})

	t.Run("prometheus scrapes the gateway", func(t *testing.T) {
		p := decodeAll(t, "prometheus.compose.yml", readFile(t, "configs/prometheus/prometheus.compose.yml"))[0]
		var targets []string
		for _, sc := range list(p["scrape_configs"]) {
			for _, st := range list(dig(sc, "static_configs")) {
				for _, tg := range list(dig(st, "targets")) {
					targets = append(targets, str(tg))
				}
			}
		}
		if !slices.Contains(targets, "gateway:"+port) {
			t.Errorf("prometheus.compose.yml targets %q, want gateway:%s", targets, port)
		}
	})
}

func TestProxyConfigs(t *testing.T) {
	nginx := string(readFile(t, "configs/nginx/pallasgw.conf"))
	for _, re := range []string{
		`(?m)^\s*proxy_buffering\s+off;`,
		`(?m)^\s*proxy_request_buffering\s+off;`,
		`(?m)^\s*proxy_http_version\s+1\.1;`,
		`(?m)^\s*proxy_set_header\s+Connection\s+"";`,
		`(?m)^\s*proxy_set_header\s+Host\s+\$http_host;`,
		`(?m)^\s*proxy_set_header\s+X-Forwarded-Proto\s+\$scheme;`,
		`(?m)^\s*proxy_set_header\s+X-Forwarded-Host\s+\$http_host;`,
		`(?m)^\s*proxy_set_header\s+X-Forwarded-For\s+\$proxy_add_x_forwarded_for;`,
		`(?m)^\s*proxy_read_timeout\s+\d+s;`,
	} {
		if !regexp.MustCompile(re).MatchString(nginx) {
			t.Errorf("configs/nginx/pallasgw.conf does not match %s", re)
		}
	}
	if regexp.MustCompile(`(?m)^\s*proxy_set_header\s+Host\s+\$host;`).MatchString(nginx) {
		t.Error("nginx sets Host $host, which drops the port")
	}
	checkBodyLimitAbove(t, "configs/nginx/pallasgw.conf", nginx, nginxBodySize)
	caddy := string(readFile(t, "configs/caddy/Caddyfile"))
	checkBodyLimitAbove(t, "configs/caddy/Caddyfile", caddy, caddyBodySize)
	checkBodyLimitAbove(t, "configs/caddy/Caddyfile.compose", string(readFile(t, "configs/caddy/Caddyfile.compose")), caddyBodySize)
	for _, re := range []string{`(?m)^\s*reverse_proxy\s+127\.0\.0\.1:8200\s*\{`, `(?m)^\s*flush_interval\s+-1\s*$`} {
		if !regexp.MustCompile(re).MatchString(caddy) {
			t.Errorf("configs/caddy/Caddyfile does not match %s", re)
		}
	}
}

// Body size limits as the proxies read them: nginx's k/m/g are powers of
// 1024; Caddy's request_body max_size takes SI (MB = 10^6) and IEC (MiB =
// 2^20) units.
var (
	nginxBodySize = regexp.MustCompile(`(?m)^\s*client_max_body_size\s+(\d+)([kKmMgG]?);`)
	caddyBodySize = regexp.MustCompile(`(?m)^\s*max_size\s+(\d+)\s*([KMG]i?B|B)?\s*$`)
	sizeUnits     = map[string]int64{"": 1, "B": 1, "k": 1 << 10, "K": 1 << 10, "m": 1 << 20, "M": 1 << 20, "g": 1 << 30, "G": 1 << 30,
		"KB": 1e3, "MB": 1e6, "GB": 1e9, "KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30}
)

// checkBodyLimitAbove checks that a proxy config lets through every body
// the gateway reads whole: its default limits.max_body_bytes, plus the
// megabyte it drains of a longer body before answering 413. A proxy that
// refuses first answers with its own page (nginx) or cuts the stream into
// an empty 502 (Caddy) instead of the gateway's JSON-RPC error.
func checkBodyLimitAbove(t *testing.T, name, text string, re *regexp.Regexp) {
	t.Helper()
	m := re.FindAllStringSubmatch(text, -1)
	if len(m) != 1 {
		t.Errorf("%s: %d body size limits (%s), want one", name, len(m), re)
		return
	}
	n, err := strconv.ParseInt(m[0][1], 10, 64)
	if err != nil {
		t.Fatalf("%s: body size %q: %v", name, m[0][0], err)
	}
	if limit := n * sizeUnits[m[0][2]]; limit <= config.DefaultMaxBodyBytes+1<<20 {
		t.Errorf("%s: body size limit %q is %d bytes, want above the gateway's limits.max_body_bytes (%d) and the 1 MiB it drains past it, so that the gateway answers its JSON-RPC 413",
			name, strings.TrimSpace(m[0][0]), limit, config.DefaultMaxBodyBytes)
	}
}

// metricRef finds identifiers that look like pallasgw or GenAI metric names.
var metricRef = regexp.MustCompile(`\b(?:pallasgw|gen_ai)_[a-z0-9_]+\b`)

// genAILabels are label names of the GenAI histograms, not metrics.
var genAILabels = map[string]bool{"gen_ai_provider_name": true, "gen_ai_request_model": true, "gen_ai_token_type": true}

// unknownMetrics returns the metric references in text that are not
// exported metric families (histogram and summary suffixes allowed).
func unknownMetrics(text string) (refs, unknown []string) {
	seen := map[string]bool{}
	for _, m := range metricRef.FindAllString(text, -1) {
		if genAILabels[m] || seen[m] {
			continue
		}
		seen[m] = true
		refs = append(refs, m)
		base := m
		for _, suf := range []string{"_bucket", "_sum", "_count"} {
			if b, ok := strings.CutSuffix(m, suf); ok && slices.Contains(metrics.Names, b) {
				base = b
			}
		}
		if !slices.Contains(metrics.Names, base) {
			unknown = append(unknown, m)
		}
	}
	return refs, unknown
}

func TestAlertsAndDashboardUseExportedMetrics(t *testing.T) {
	alerts := decodeAll(t, "alerts.yml", readFile(t, "configs/prometheus/alerts.yml"))[0]
	exprs := map[string]string{}
	for _, g := range list(alerts["groups"]) {
		for _, r := range list(dig(g, "rules")) {
			exprs[str(dig(r, "alert"))] = str(dig(r, "expr"))
		}
	}
	all := ""
	for name, e := range exprs {
		all += e + "\n"
		if _, unknown := unknownMetrics(e); len(unknown) > 0 {
			t.Errorf("alert %s uses metrics the gateway does not export: %q", name, unknown)
		}
	}
	// The alerts the runbook promises.
	for _, want := range []string{
		"pallasgw_config_last_reload_successful", "pallasgw_agent_health", "pallasgw_tool_calls_total",
		"gen_ai_client_operation_duration_seconds_bucket", "pallasgw_llm_provider_up",
	} {
		if !strings.Contains(all, want) {
			t.Errorf("no alert uses %s", want)
		}
	}

	raw := readFile(t, "configs/grafana/pallasgw-dashboard.json")
	var dash struct {
		Inputs []struct{ Name, PluginID string } `json:"__inputs"`
		Panels []struct {
			Title      string `json:"title"`
			Type       string `json:"type"`
			Datasource struct {
				UID string `json:"uid"`
			} `json:"datasource"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
	}
	if err := json.Unmarshal(raw, &dash); err != nil {
		t.Fatalf("dashboard: %v", err)
	}
	if len(dash.Inputs) == 0 || dash.Inputs[0].Name != "DS_PROMETHEUS" || dash.Inputs[0].PluginID != "prometheus" {
		t.Errorf("dashboard __inputs %v, want a DS_PROMETHEUS prometheus datasource", dash.Inputs)
	}
	used := map[string]bool{}
	for _, p := range dash.Panels {
		if p.Type == "row" {
			continue
		}
		if p.Datasource.UID != "${DS_PROMETHEUS}" {
			t.Errorf("panel %q datasource %q, want ${DS_PROMETHEUS}", p.Title, p.Datasource.UID)
		}
		if len(p.Targets) == 0 {
			t.Errorf("panel %q has no query", p.Title)
		}
		for _, tg := range p.Targets {
			refs, unknown := unknownMetrics(tg.Expr)
			if len(unknown) > 0 {
				t.Errorf("panel %q uses metrics the gateway does not export: %q", p.Title, unknown)
			}
			for _, r := range refs {
				used[strings.TrimSuffix(strings.TrimSuffix(strings.TrimSuffix(r, "_bucket"), "_sum"), "_count")] = true
			}
		}
	}
	for _, n := range metrics.Names {
		if !used[n] {
			t.Errorf("no dashboard panel shows %s", n)
		}
	}
}

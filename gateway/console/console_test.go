package console

import (
	"encoding/json"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
)

type fakeSource struct {
	enabled bool
	origin  bool
	list    Listing
	refusal *Refusal
	asked   int
}

func (f *fakeSource) Enabled() bool                    { return f.enabled }
func (f *fakeSource) OriginAllowed(*http.Request) bool { return f.origin }
func (f *fakeSource) Agents(*http.Request) (Listing, *Refusal) {
	f.asked++
	return f.list, f.refusal
}

func serve(h http.Handler, method, path string, hdr map[string]string) *httptest.ResponseRecorder {
	req := httptest.NewRequest(method, path, nil)
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}

func TestPagesCarrySecurityHeaders(t *testing.T) {
	h := New(Options{Source: &fakeSource{enabled: true}})
	cases := []struct{ path, ctype string }{
		{"/", "text/html; charset=utf-8"},
		{"/console/app.js", "text/javascript; charset=utf-8"},
		{"/console/mcp.js", "text/javascript; charset=utf-8"},
		{"/console/console.css", "text/css; charset=utf-8"},
		{"/console/icon.svg", "image/svg+xml"},
	}
	for _, c := range cases {
		t.Run(c.path, func(t *testing.T) {
			rec := serve(h, http.MethodGet, c.path, nil) // no token: the page needs none
			if rec.Code != http.StatusOK {
				t.Fatalf("%d %s", rec.Code, rec.Body)
			}
			want := map[string]string{
				"Content-Type":            c.ctype,
				"Content-Security-Policy": ContentSecurityPolicy,
				"X-Content-Type-Options":  "nosniff",
				"X-Frame-Options":         "DENY",
				"Referrer-Policy":         "no-referrer",
				"Cache-Control":           "no-cache",
			}
			for k, v := range want {
				if got := rec.Header().Get(k); got != v {
					t.Errorf("%s: %q, want %q", k, got, v)
				}
			}
			if rec.Header().Get("Set-Cookie") != "" {
				t.Error("a console answer sets a cookie")
			}
			etag := rec.Header().Get("ETag")
			if etag == "" {
				t.Fatal("no ETag")
			}
			if again := serve(h, http.MethodGet, c.path, map[string]string{"If-None-Match": etag}); again.Code != http.StatusNotModified {
				t.Errorf("revalidation answered %d", again.Code)
			}
		})
	}
	csp := ContentSecurityPolicy
	for _, part := range []string{"default-src 'self'", "script-src 'self'", "style-src 'self'", "frame-ancestors 'none'"} {
		if !strings.Contains(csp, part) {
			t.Errorf("CSP lacks %q", part)
		}
	}
	if strings.Contains(csp, "unsafe-inline") || strings.Contains(csp, "unsafe-eval") || strings.Contains(csp, "http") {
		t.Errorf("CSP allows inline code or another origin: %s", csp)
	}
}

// The page works under its CSP only when nothing in it is inline, every
// file it names is embedded, and nothing is fetched from elsewhere; the
// tokens stay in the tab.
func TestAssetsSelfContained(t *testing.T) {
	h := New(Options{Source: &fakeSource{enabled: true}})
	page := serve(h, http.MethodGet, "/", nil).Body.String()
	if regexp.MustCompile(`<script(?:\s[^>]*)?>\s*[^<\s]`).MatchString(page) || strings.Contains(page, "<style") ||
		regexp.MustCompile(`\sstyle=|\son[a-z]+=`).MatchString(page) {
		t.Error("index.html has inline script, style or event handlers")
	}
	for _, m := range regexp.MustCompile(`(?:src|href)="([^"]+)"`).FindAllStringSubmatch(page, -1) {
		if rec := serve(h, http.MethodGet, "/"+m[1], nil); rec.Code != http.StatusOK {
			t.Errorf("the page names %s, which answers %d", m[1], rec.Code)
		}
	}
	fs.WalkDir(assetFS, "assets", func(p string, d fs.DirEntry, err error) error {
		if d.IsDir() {
			return nil
		}
		b, _ := assetFS.ReadFile(p)
		s := string(b)
		if strings.HasSuffix(p, ".js") {
			for _, m := range regexp.MustCompile(`from "([^"]+)"|import\("([^"]+)"\)`).FindAllStringSubmatch(s, -1) {
				dep := m[1] + m[2]
				if rec := serve(h, http.MethodGet, "/console/"+strings.TrimPrefix(dep, "./"), nil); rec.Code != http.StatusOK {
					t.Errorf("%s imports %s, which answers %d", p, dep, rec.Code)
				}
			}
			for _, banned := range []string{"localStorage", "document.cookie", "innerHTML", "eval(", "new Function"} {
				if strings.Contains(s, banned) {
					t.Errorf("%s uses %s", p, banned)
				}
			}
		}
		if regexp.MustCompile(`https?://`).MatchString(strings.ReplaceAll(s, "http://www.w3.org/2000/svg", "")) {
			t.Errorf("%s names another origin", p)
		}
		return nil
	})
}

func TestOffSwitch(t *testing.T) {
	src := &fakeSource{enabled: false}
	notFound := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusTeapot) })
	h := New(Options{Source: src, NotFound: notFound})
	for _, p := range []string{"/", "/console/app.js", "/console/agents"} {
		for _, m := range []string{http.MethodGet, http.MethodPost} {
			rec := serve(h, m, p, nil)
			if rec.Code != http.StatusTeapot {
				t.Errorf("%s %s with the console off: %d", m, p, rec.Code)
			}
			if rec.Header().Get("Content-Security-Policy") != "" {
				t.Errorf("%s %s with the console off answers as the console", m, p)
			}
		}
	}
	if src.asked != 0 {
		t.Error("agents listed with the console off")
	}
	if rec := serve(New(Options{Source: &fakeSource{enabled: true}}), http.MethodGet, "/console/nothing.js", nil); rec.Code != http.StatusNotFound {
		t.Errorf("unknown asset: %d", rec.Code)
	}
}

func TestAgentsAPI(t *testing.T) {
	list := Listing{Gateway: "gw", AuthMode: "tokens", Caller: "alice", Agents: []Agent{{Name: "echo", Kind: "llm", Servers: []string{}}}}
	cases := []struct {
		name    string
		src     fakeSource
		method  string
		origin  string
		code    int
		want    string
		asked   int
		challen string
	}{
		{"listing", fakeSource{enabled: true, list: list}, http.MethodPost, "", 200, `"caller":"alice"`, 1, ""},
		{"loopback page", fakeSource{enabled: true, origin: true, list: list}, http.MethodPost, "http://localhost:8200", 200, `"name":"echo"`, 1, ""},
		{"foreign origin", fakeSource{enabled: true, origin: false, list: list}, http.MethodPost, "http://evil.example.com", 403, "allowed_origins", 0, ""},
		{"GET (no Origin sent by browsers)", fakeSource{enabled: true, list: list}, http.MethodGet, "", 405, "POST", 0, ""},
		{"no token", fakeSource{enabled: true, list: Listing{AuthMode: "tokens"}, refusal: &Refusal{Status: 401, Challenge: `Bearer realm="pallasgw"`, Message: "access denied: missing_token"}},
			http.MethodPost, "", 401, `"auth_mode":"tokens"`, 1, `Bearer realm="pallasgw"`},
		{"nothing allowed", fakeSource{enabled: true, list: Listing{AuthMode: "tokens"}}, http.MethodPost, "", 200, `"agents":[]`, 1, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			src := c.src
			h := New(Options{Source: &src, RequestID: func(*http.Request) string { return "rid-7" }})
			hdr := map[string]string{}
			if c.origin != "" {
				hdr["Origin"] = c.origin
			}
			rec := serve(h, c.method, "/console/agents", hdr)
			if rec.Code != c.code || !strings.Contains(rec.Body.String(), c.want) {
				t.Fatalf("%d %s, want %d with %s", rec.Code, rec.Body, c.code, c.want)
			}
			if src.asked != c.asked {
				t.Errorf("Agents asked %d times, want %d", src.asked, c.asked)
			}
			if got := rec.Header().Get("WWW-Authenticate"); got != c.challen {
				t.Errorf("WWW-Authenticate %q, want %q", got, c.challen)
			}
			if rec.Header().Get("Cache-Control") != "no-store" || rec.Header().Get("Content-Security-Policy") == "" {
				t.Errorf("headers %v", rec.Header())
			}
			if rec.Code != 200 && !strings.Contains(rec.Body.String(), "rid-7") {
				t.Errorf("error without the request id: %s", rec.Body)
			}
			var v map[string]any
			if err := json.Unmarshal(rec.Body.Bytes(), &v); err != nil {
				t.Errorf("not JSON: %v", err)
			}
		})
	}
}

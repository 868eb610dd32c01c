package upstreamauth

// The connect pages' HTML and JSON: plain, no script, no external asset.

import (
	"encoding/base64"
	"encoding/json"
	"html/template"
	"net/http"
	"net/url"
	"sort"
	"strings"

	"github.com/pallasgw/pallasgw/gateway/config"
)

var pageTmpl = template.Must(template.New("page").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width">
<meta name="referrer" content="no-referrer"><title>{{.Title}}</title>
<style>body{font:16px/1.5 system-ui,sans-serif;max-width:40em;margin:3em auto;padding:0 1em}
table{border-collapse:collapse}td,th{padding:.3em .8em;text-align:left;border-bottom:1px solid #ddd}</style></head>
<body><h1>{{.Title}}</h1><p>{{.Text}}</p>
{{if .SignIn}}<form method="post" action="/connect/signin"><input type="hidden" name="next" value="{{.Next}}"><input type="hidden" name="csrf" value="{{.CSRF}}">
<label>Your gateway token <input type="password" name="token" autocomplete="off" required></label>
<button type="submit">Sign in</button></form>{{end}}
{{if .List}}<table><tr><th>Server</th><th>State</th><th></th></tr>
{{range .Conns}}<tr><td>{{.Server}}</td><td>{{.State}}</td><td>
{{if eq .State "connected" "expired"}}<form method="post" action="/connect/revoke"><input type="hidden" name="server" value="{{.Server}}"><button>Revoke</button></form>
{{else}}<form method="post" action="/connect/start"><input type="hidden" name="server" value="{{.Server}}"><button>Connect</button></form>{{end}}
</td></tr>{{end}}</table>{{end}}
</body></html>
`))

type pageData struct {
	Title, Text, Next, CSRF string
	SignIn, List            bool
	Conns                   []Connection
}

func render(w http.ResponseWriter, status int, d pageData) {
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Cache-Control", "no-store")
	// No form-action: Chromium applies it to a form's redirects too, and
	// Connect goes on to the authorization server.
	h.Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'; base-uri 'none'; frame-ancestors 'none'")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Referrer-Policy", "no-referrer")
	if status != 0 {
		w.WriteHeader(status)
	}
	_ = pageTmpl.Execute(w, d)
}

func page(w http.ResponseWriter, status int, title, text string) {
	render(w, status, pageData{Title: title, Text: text})
}

func signInPage(w http.ResponseWriter, status int, next, csrf, problem string) {
	text := "Sign in with the token you call the gateway with, to prove this browser is you."
	if problem != "" {
		text = problem + " " + text
	}
	render(w, status, pageData{Title: "Sign in", Text: text, Next: next, CSRF: csrf, SignIn: true})
}

func listPage(w http.ResponseWriter, who string, conns []Connection) {
	render(w, http.StatusOK, pageData{Title: "Your connections", Text: "Signed in as " + who + ".", List: true, Conns: conns})
}

func wantsJSON(r *http.Request) bool {
	return strings.Contains(r.Header.Get("Accept"), "application/json")
}

func jsonAnswer(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// safeCode keeps an OAuth error code's characters (RFC 6749 §5.2) and
// length, for a page and a log line.
func safeCode(s string) string {
	if len(s) > 64 {
		s = s[:64]
	}
	return strings.Map(func(r rune) rune {
		if r >= 0x20 && r <= 0x7e && r != '"' && r != '\\' {
			return r
		}
		return -1
	}, s)
}

func urlEscape(s string) string { return url.QueryEscape(s) }

func base64URL(s string) ([]byte, error) { return base64.RawURLEncoding.DecodeString(s) }

func base64URLEncode(b []byte) string { return base64.RawURLEncoding.EncodeToString(b) }

func sortedNames(m map[string]*config.Server) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// Package console owns the built-in web console served at "/": a page, its
// scripts and styles (embedded, no build step, nothing fetched from
// elsewhere) and the one JSON answer the page needs that no other endpoint
// gives, the agents the viewer may use (POST console/agents). Everything
// else the page does goes through the gateway's own endpoints like any
// client: MCP to /agents/{name}/mcp, /-/status, /metrics and the tool pins
// review (/-/pins, /-/pins/approve and /-/pins/reject, admin only).
//
// It knows nothing of snapshots, configs or policy: the gateway hands it a
// Source that answers from the serving snapshot. It must never put a value
// of the config or of a request into the page itself (the page is static;
// data arrives as JSON), and every answer carries the security headers.
package console

import (
	"bytes"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"encoding/json"
	"io/fs"
	"net/http"
	"path"
	"strings"
	"time"
)

//go:embed assets
var assetFS embed.FS

// ContentSecurityPolicy is sent with every console answer: scripts, styles
// and connections only from the gateway itself, no inline script or style,
// images also as data: URLs (an agent's image results), no framing.
const ContentSecurityPolicy = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; " +
	"connect-src 'self'; object-src 'none'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

// Agent is one agent as the console lists it: what /-/status shows of it,
// for a viewer who may use it.
type Agent struct {
	Name        string   `json:"name"`
	Title       string   `json:"title"`
	Description string   `json:"description,omitempty"`
	Kind        string   `json:"kind"`
	Model       string   `json:"model,omitempty"`
	Servers     []string `json:"servers"`
	Agents      []string `json:"agents,omitempty"` // sub-agents
	Port        int      `json:"port,omitempty"`   // legacy alias port
	ToolName    string   `json:"tool_name,omitempty"`
}

// Listing is the answer of POST console/agents.
type Listing struct {
	Gateway  string  `json:"gateway"`   // the config's name
	AuthMode string  `json:"auth_mode"` // passthrough | tokens | jwt
	Caller   string  `json:"caller,omitempty"`
	Agents   []Agent `json:"agents"`
}

// Refusal is why a listing was refused: HTTP status, the WWW-Authenticate
// challenge (may be empty) and a message.
type Refusal struct {
	Status    int
	Challenge string
	Message   string
}

// Source is what the console needs of the running gateway. Each method
// reads the snapshot serving at the time of the call.
type Source interface {
	// Enabled is the config's console key: false answers 404 everywhere.
	Enabled() bool
	// OriginAllowed applies the gateway's Origin rule to a request that
	// carries an Origin.
	OriginAllowed(r *http.Request) bool
	// Agents lists the agents r's caller may use, under the same inbound
	// auth and caller rules as their endpoints, or says why none.
	Agents(r *http.Request) (Listing, *Refusal)
}

// Options configure the console handler.
type Options struct {
	Source Source
	// NotFound answers unknown console paths and every path when the
	// console is off; default http.NotFound.
	NotFound http.Handler
	// RequestID names the request in error bodies; may be nil.
	RequestID func(r *http.Request) string
}

type asset struct {
	body  []byte
	ctype string
	etag  string
}

// Handler serves GET / (the page), GET console/<file> (its assets) and
// POST console/agents.
type Handler struct {
	o      Options
	assets map[string]asset // by URL path
	mod    time.Time
}

// contentTypes are the types of the embedded files; nosniff makes the
// browser hold them to these.
var contentTypes = map[string]string{
	".html": "text/html; charset=utf-8",
	".js":   "text/javascript; charset=utf-8",
	".css":  "text/css; charset=utf-8",
	".svg":  "image/svg+xml",
}

// New builds the handler; it panics when the embedded assets are broken
// (a build defect, caught by the package's tests).
func New(o Options) *Handler {
	if o.Source == nil {
		panic("console: Options.Source is required")
	}
	if o.NotFound == nil {
		o.NotFound = http.HandlerFunc(http.NotFound)
	}
	h := &Handler{o: o, assets: map[string]asset{}, mod: time.Now()}
	err := fs.WalkDir(assetFS, "assets", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		ctype, ok := contentTypes[path.Ext(p)]
		if !ok {
			return nil
		}
		b, err := assetFS.ReadFile(p)
		if err != nil {
			return err
		}
		sum := sha256.Sum256(b)
		a := asset{body: b, ctype: ctype, etag: `"` + hex.EncodeToString(sum[:8]) + `"`}
		name := strings.TrimPrefix(p, "assets/")
		if name == "index.html" {
			h.assets["/"] = a
		} else {
			h.assets["/console/"+name] = a
		}
		return nil
	})
	if err != nil || h.assets["/"].body == nil {
		panic("console: embedded assets: missing index.html or unreadable: " + errString(err))
	}
	return h
}

func errString(err error) string {
	if err == nil {
		return "<nil>"
	}
	return err.Error()
}

// SecurityHeaders sets the headers every console answer carries.
func SecurityHeaders(h http.Header) {
	h.Set("Content-Security-Policy", ContentSecurityPolicy)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("Cross-Origin-Opener-Policy", "same-origin")
	h.Set("Cross-Origin-Resource-Policy", "same-origin")
}

func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !h.o.Source.Enabled() {
		h.o.NotFound.ServeHTTP(w, r)
		return
	}
	SecurityHeaders(w.Header())
	if r.URL.Path == "/console/agents" {
		h.serveAgents(w, r)
		return
	}
	a, ok := h.assets[r.URL.Path]
	if !ok {
		h.o.NotFound.ServeHTTP(w, r)
		return
	}
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		h.writeError(w, r, http.StatusMethodNotAllowed, "method not allowed")
		return
	}
	w.Header().Set("Content-Type", a.ctype)
	w.Header().Set("Cache-Control", "no-cache") // revalidated by ETag: a new binary's page is seen at once
	w.Header().Set("ETag", a.etag)
	http.ServeContent(w, r, "", h.mod, bytes.NewReader(a.body))
}

// serveAgents answers POST console/agents. It is a POST so that browsers
// send their Origin (they leave it off same-origin GETs), and the Origin
// rule of the agent endpoints applies to it as to them.
func (h *Handler) serveAgents(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Cache-Control", "no-store")
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", "POST")
		h.writeError(w, r, http.StatusMethodNotAllowed, "POST this path")
		return
	}
	if r.Header.Get("Origin") != "" && !h.o.Source.OriginAllowed(r) {
		h.writeError(w, r, http.StatusForbidden, "origin is not in allowed_origins (nor a loopback page calling a loopback host)")
		return
	}
	list, refused := h.o.Source.Agents(r)
	if refused != nil {
		if refused.Challenge != "" {
			w.Header().Set("WWW-Authenticate", refused.Challenge)
		}
		h.writeJSON(w, refused.Status, map[string]any{"error": refused.Message, "status": refused.Status,
			"auth_mode": list.AuthMode, "request_id": h.requestID(r)})
		return
	}
	if list.Agents == nil {
		list.Agents = []Agent{}
	}
	h.writeJSON(w, http.StatusOK, list)
}

func (h *Handler) requestID(r *http.Request) string {
	if h.o.RequestID == nil {
		return ""
	}
	return h.o.RequestID(r)
}

func (h *Handler) writeError(w http.ResponseWriter, r *http.Request, status int, msg string) {
	h.writeJSON(w, status, map[string]any{"error": msg, "status": status, "request_id": h.requestID(r)})
}

func (h *Handler) writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}

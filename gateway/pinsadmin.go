package gateway

import (
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"net/http"

	"go.uber.org/zap"

	"github.com/pallasgw/pallasgw/agents"
	"github.com/pallasgw/pallasgw/agents/pins"
)

// maxReviewBody bounds the body of POST /-/pins/approve and /-/pins/reject.
const maxReviewBody = 64 << 10

// pinsView is the answer of GET /-/pins: what the console's review panel
// shows. Writable says whether the gateway may rewrite the pins file
// (NotWritable says why not: no pins file, a read-only mount, a symlinked
// ConfigMap file); where it may not, each item carries the YAML entry and
// the CLI command that record the decision from an operator's checkout.
type pinsView struct {
	PinsFile    string            `json:"pins_file"`
	ConfigFile  string            `json:"config_file"`
	Writable    bool              `json:"writable"`
	NotWritable string            `json:"not_writable,omitempty"`
	Pending     []pinsReviewEntry `json:"pending"`
}

// pinsReviewEntry is one pending definition with both sides of its diff.
type pinsReviewEntry struct {
	pins.PendingTool
	Old     string          `json:"old"` // the approved definition, indented; empty for a new tool
	New     string          `json:"new"` // the live definition, indented
	Diff    []pins.DiffLine `json:"diff"`
	Approve manualReview    `json:"approve"`
	Reject  manualReview    `json:"reject"`
}

// manualReview is a decision as an operator applies it by hand: the pins
// file entry it leaves and the equivalent `pallasgw pins` command.
type manualReview struct {
	YAML    string `json:"yaml"`
	Command string `json:"command"`
}

// pinsWritable says why the serving config's pins file cannot be
// rewritten by this process, or "" when it can (pins.Writable: a real
// write test in its directory).
func pinsWritable(path string) string {
	if path == "" {
		return "no pins file is configured (top-level pins: PATH)"
	}
	if err := pins.Writable(path); err != nil {
		return "the pins file is not writable: " + err.Error()
	}
	return ""
}

// pinsViewHandler serves GET /-/pins (admin): the definitions awaiting a
// reviewer, each with the approved and the live definition and their line
// diff.
func (g *Gateway) pinsViewHandler(w http.ResponseWriter, r *http.Request) {
	s := g.acquire()
	path, cfgFile := s.cfg.PinsPath, s.cfg.File
	s.release()
	file := g.pins.Policy().File
	v := pinsView{PinsFile: path, ConfigFile: cfgFile, Pending: []pinsReviewEntry{}}
	for _, pt := range g.pins.Pending() {
		v.Pending = append(v.Pending, reviewEntry(file, cfgFile, pt))
	}
	if len(v.Pending) > 0 || path == "" { // the probe writes in the pins file's directory: only when needed
		v.NotWritable = pinsWritable(path)
	}
	v.Writable = v.NotWritable == ""
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	json.NewEncoder(w).Encode(v)
}

// reviewEntry builds the review of one pending definition against the
// pins file f in force.
func reviewEntry(f *pins.File, cfgFile string, pt pins.PendingTool) pinsReviewEntry {
	d := pins.Def{Name: pt.Tool, Canonical: pt.Definition, Hash: pt.Hash}
	e := pinsReviewEntry{PendingTool: pt, Old: pins.Pretty(pt.Approved), New: pins.Pretty(pt.Definition),
		Diff: pins.Diff(pt.Approved, pt.Definition)}
	if e.Diff == nil {
		e.Diff = []pins.DiffLine{}
	}
	for _, m := range []struct {
		approve bool
		out     *manualReview
	}{{true, &e.Approve}, {false, &e.Reject}} {
		m.out.Command = pins.ReviewCommand(cfgFile, pt.Server, d, m.approve)
		if yml, err := pins.ReviewedEntry(f, pt.Server, d, m.approve); err == nil {
			m.out.YAML = yml
		}
	}
	return e
}

// reviewRequest is the body of POST /-/pins/approve and /-/pins/reject:
// the tool and the hash of the definition the reviewer saw.
type reviewRequest struct {
	Server string `json:"server"`
	Tool   string `json:"tool"`
	Hash   string `json:"hash"`
}

// reviewError is a refused review: the status and what to tell.
type reviewError struct {
	status int
	msg    string
}

func (e *reviewError) Error() string { return e.msg }

// pinsReviewHandler serves POST /-/pins/approve (approve true) and
// /-/pins/reject (admin): it records the decision on the pending
// definition named by the body in the pins file, through pins.Review (the
// CLI's locked atomic rewrite). The file is watched: the decision applies
// at the next reload, here and on every replica sharing the file.
func (g *Gateway) pinsReviewHandler(approve bool) http.HandlerFunc {
	verb := map[bool]string{true: "approved", false: "rejected"}[approve]
	return func(w http.ResponseWriter, r *http.Request) {
		rid := agents.RequestID(r.Context())
		req, pt, path, re := g.reviewTarget(w, r)
		if re == nil {
			re = g.writeReview(path, pt, approve)
		}
		if re != nil {
			writeError(w, re.status, rid, re.msg)
			return
		}
		g.log.Info("tool definition "+verb+" in the console", zap.String("server", req.Server), zap.String("tool", req.Tool),
			zap.String("hash", req.Hash), zap.String("pins_file", path), zap.String("request_id", rid))
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{"ok": true, "action": verb, "server": req.Server, "tool": req.Tool,
			"hash": req.Hash, "pins_file": path, "applies": "at the next reload (the pins file is watched)"})
	}
}

// reviewTarget reads the review request and finds the pending definition
// it names, under the serving config's pins file.
func (g *Gateway) reviewTarget(w http.ResponseWriter, r *http.Request) (reviewRequest, pins.PendingTool, string, *reviewError) {
	var req reviewRequest
	if mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type")); mt != "application/json" {
		return req, pins.PendingTool{}, "", &reviewError{http.StatusUnsupportedMediaType, "send the body as application/json"}
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxReviewBody))
	if err == nil {
		err = json.Unmarshal(body, &req)
	}
	if err != nil || req.Server == "" || req.Tool == "" || req.Hash == "" {
		return req, pins.PendingTool{}, "", &reviewError{http.StatusBadRequest, `want a JSON body {"server": S, "tool": T, "hash": "sha256:…"} (the hash of the definition reviewed)`}
	}
	s := g.acquire()
	_, known := s.cfg.MCP.Servers[req.Server]
	path := s.cfg.PinsPath
	s.release()
	if !known {
		return req, pins.PendingTool{}, "", &reviewError{http.StatusNotFound, fmt.Sprintf("server %s is not in the config", quoteClipped(req.Server))}
	}
	for _, pt := range g.pins.Pending() {
		if pt.Server != req.Server || pt.Tool != req.Tool {
			continue
		}
		if pt.Hash != req.Hash {
			return req, pt, path, &reviewError{http.StatusConflict, fmt.Sprintf("tool %s of server %s is now defined as %s, not the %s reviewed: look at the new diff",
				quoteClipped(req.Tool), quoteClipped(req.Server), pt.Hash, quoteClipped(req.Hash))}
		}
		return req, pt, path, nil
	}
	if _, seen := g.pins.Observed(req.Server, req.Tool); seen {
		return req, pins.PendingTool{}, path, &reviewError{http.StatusConflict, fmt.Sprintf("tool %s of server %s awaits no review (approved, rejected or not pinned)",
			quoteClipped(req.Tool), quoteClipped(req.Server))}
	}
	return req, pins.PendingTool{}, path, &reviewError{http.StatusNotFound, fmt.Sprintf("server %s has listed no tool %s",
		quoteClipped(req.Server), quoteClipped(req.Tool))}
}

// writeReview records the decision on pt in the pins file at path, or
// says why it cannot (409 when the file is not writable, with the way to
// do it by hand in GET /-/pins).
func (g *Gateway) writeReview(path string, pt pins.PendingTool, approve bool) *reviewError {
	if len(pt.Definition) == 0 {
		return &reviewError{http.StatusConflict, fmt.Sprintf("tool %s of server %s sent a definition that is not a readable JSON object: there is nothing to pin",
			quoteClipped(pt.Tool), quoteClipped(pt.Server))}
	}
	if why := pinsWritable(path); why != "" {
		return &reviewError{http.StatusConflict, why + "; record the decision in your checkout (GET /-/pins shows the YAML entry and the pallasgw pins command)"}
	}
	d := pins.Def{Name: pt.Tool, Canonical: pt.Definition, Hash: pt.Hash}
	if err := pins.Review(path, pt.Server, d, approve); err != nil {
		g.log.Warn("writing the pins file", zap.String("pins_file", path), zap.Error(err))
		return &reviewError{http.StatusInternalServerError, "writing the pins file: " + err.Error()}
	}
	return nil
}

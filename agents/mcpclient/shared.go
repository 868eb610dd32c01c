package mcpclient

// A caller's downstream session shared by replicas (Options.Sessions, the
// config's sessions.store). Under session_scope caller, the session of a
// caller on a Streamable HTTP server is recorded in the store when a
// replica opens it (its id, protocol version and the server's
// capabilities); a replica that has no session for that caller adopts the
// recorded one (mcp-go's transport.WithSession and client.WithSession: no
// initialize) instead of opening its own, so the downstream's state for
// the caller (log level, subscriptions, tasks, whatever the server keeps)
// follows the caller from replica to replica. A shared session is never
// ended by a replica (no DELETE when it closes its client): the others may
// still use it, and the server expires it. A replica whose adopted session
// the server no longer knows opens a new one and records it, unless
// another replica recorded a newer one first, which it adopts. Only the
// caller's own operations use it (scope.go); an adopted session opens no
// GET stream (the replica that opened it listens).
//
// The store is read when a replica connects the session, not per call. A
// failed read fails the call with the store's error (sessions.
// ErrStoreUnavailable: the caller gets 503); a failed write leaves the
// session this replica's own until its next connect. The store logs and
// counts its own failures (the gateway's).

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	"go.uber.org/zap"
)

// SessionStore keeps what replicas share (sessions.Store implements it).
type SessionStore interface {
	Get(ctx context.Context, key string) ([]byte, error)
	Set(ctx context.Context, key string, val []byte, ttl time.Duration) error
}

// sharedTTL is how long a recorded session is offered to other replicas
// after it was recorded; a server that forgot it sooner answers 404 and
// the adopter opens a new one.
const sharedTTL = 24 * time.Hour

// sharedRecord is what the store keeps of a caller's downstream session.
type sharedRecord struct {
	ID      string                 `json:"id"`
	Version string                 `json:"version"`
	Caps    mcp.ServerCapabilities `json:"caps"`
}

// sharedKey is the store key of the pooled session key on server (a
// digest: the key names a caller).
func sharedKey(server, key string) string {
	sum := sha256.Sum256([]byte(server + "\x00" + key))
	return "downstream:" + hex.EncodeToString(sum[:])
}

// sharable reports whether the session of key on srv is shared by
// replicas: a caller's session on a Streamable HTTP server, with a store.
func (srv *remote) sharable(key string) bool {
	return srv.m.opts.Sessions != nil && srv.spec.Transport == TransportHTTP && strings.HasPrefix(key, callerKeyPrefix)
}

// adoptable returns the recorded session s may adopt, nil when there is
// none (or it is the one s just lost).
func (s *session) adoptable(ctx context.Context) (*sharedRecord, error) {
	b, err := s.srv.m.opts.Sessions.Get(ctx, s.shared)
	if err != nil {
		return nil, err
	}
	var rec sharedRecord
	if b == nil || json.Unmarshal(b, &rec) != nil || rec.ID == "" || rec.ID == s.lost {
		return nil, nil
	}
	return &rec, nil
}

// record offers the session cli just opened (at version) to the other
// replicas.
func (s *session) record(ctx context.Context, cli *client.Client, version string) {
	id := sessionIDOf(cli.GetTransport())
	if id == "" {
		return // a server that keeps no session
	}
	if b, err := json.Marshal(sharedRecord{ID: id, Version: version, Caps: cli.GetServerCapabilities()}); err == nil {
		_ = s.srv.m.opts.Sessions.Set(ctx, s.shared, b, sharedTTL) // a failure is the store's to report
	}
}

// adopted counts a session taken over from another replica.
func (s *session) adopted() {
	s.srv.m.log.Debug("downstream session adopted from another replica", zap.String(fieldServer, s.srv.spec.Name))
	if mt := s.srv.m.opts.Metrics; mt != nil {
		mt.DownstreamAdoptions.WithLabelValues(s.srv.spec.Name).Inc()
	}
}

// sessionIDOf is the downstream session id of a Streamable HTTP client's
// transport, "" for others.
func sessionIDOf(tr transport.Interface) string {
	if h, ok := tr.(*transport.StreamableHTTP); ok {
		return h.GetSessionId()
	}
	return ""
}

// keptOpen answers the DELETE that closing the client of a shared session
// would send (mcp-go's StreamableHTTP.Close): the session stays the
// server's until it expires it.
func keptOpen(req *http.Request) *http.Response {
	return &http.Response{StatusCode: http.StatusNoContent, Status: fmt.Sprint(http.StatusNoContent), Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header: http.Header{}, Body: http.NoBody, Request: req}
}

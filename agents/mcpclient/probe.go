package mcpclient

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	"go.uber.org/zap"

	"github.com/pallasgw/pallasgw/agents/wire"
)

// maxProbeBody bounds how much of an initialize answer Probe reads.
const maxProbeBody = 1 << 20

// Probe checks that server answers, for health reporting; ctx carries the
// deadline. http: a plain-HTTP initialize with hdr, then a DELETE of the
// returned session carrying the same hdr (mcp-go's Close sends its DELETE
// without them). sse: a throwaway mcp-go SSE session with hdr. stdio: the
// process is started if needed and pinged. Failures wrap ErrUnavailable
// unless ctx ended.
func (m *Manager) Probe(ctx context.Context, server string, hdr http.Header) error {
	srv, err := m.lookup(server)
	if err != nil {
		return err
	}
	if srv.spec.Transport == TransportStdio {
		return m.do(ctx, server, "probe", nil, func(ctx context.Context, _ *session, cli *client.Client) error {
			return cli.Ping(ctx)
		})
	}
	ctx, end, ok := m.begin(ctx, 0)
	defer end()
	if !ok {
		return srv.wrap(ctx, "probe", errClosed)
	}
	if srv.spec.Transport == TransportSSE {
		err = srv.probeSSE(ctx, canonical(hdr))
	} else {
		err = srv.probeHTTP(ctx, canonical(hdr))
	}
	if err != nil && ctx.Err() == nil {
		err = fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	return scrub(srv.wrap(ctx, "probe", err), hdr, srv.secrets)
}

// probeHTTP sends initialize and, when the server opened a session, DELETEs
// it.
func (srv *remote) probeHTTP(ctx context.Context, hdr http.Header) error {
	body, err := json.Marshal(map[string]any{
		"jsonrpc": mcp.JSONRPC_VERSION, "id": 1, "method": mcp.MethodInitialize,
		"params": map[string]any{
			"protocolVersion": mcp.LATEST_LEGACY_PROTOCOL_VERSION,
			"capabilities":    map[string]any{},
			"clientInfo":      mcp.Implementation{Name: srv.m.opts.ClientName, Version: srv.m.opts.ClientVersion},
		},
	})
	if err != nil {
		return err
	}
	req, err := srv.probeRequest(ctx, http.MethodPost, bytes.NewReader(body), hdr)
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := srv.transport.RoundTrip(req)
	if err != nil {
		return fmt.Errorf("initialize: %w", err)
	}
	version, err := readInitialize(resp)
	if err != nil {
		return fmt.Errorf("initialize: %w", err)
	}
	if sid := resp.Header.Get(transport.HeaderKeySessionID); sid != "" {
		srv.probeDelete(ctx, hdr, sid, version)
	}
	return nil
}

// probeDelete ends the probe's session. Its failure does not fail the probe:
// the server did answer initialize.
func (srv *remote) probeDelete(ctx context.Context, hdr http.Header, sid, version string) {
	req, err := srv.probeRequest(ctx, http.MethodDelete, nil, hdr)
	if err != nil {
		return
	}
	req.Header.Set(transport.HeaderKeySessionID, sid)
	if version != "" {
		req.Header.Set(transport.HeaderKeyProtocolVersion, version)
	}
	resp, err := srv.transport.RoundTrip(req)
	if err != nil {
		srv.m.log.Debug("probe: deleting session", zap.String(fieldServer, srv.spec.Name), zap.Error(scrub(err, hdr, srv.secrets)))
		return
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxProbeBody))
	_ = resp.Body.Close()
}

func (srv *remote) probeRequest(ctx context.Context, method string, body io.Reader, hdr http.Header) (*http.Request, error) {
	req, err := http.NewRequestWithContext(ctx, method, srv.spec.URL, body)
	if err != nil {
		return nil, err
	}
	for name, vals := range hdr {
		req.Header[name] = vals
	}
	return req, nil
}

// readInitialize checks an initialize answer, JSON or SSE, and returns the
// negotiated protocol version. It closes the body.
func readInitialize(resp *http.Response) (string, error) {
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("HTTP status %d", resp.StatusCode)
	}
	body := io.LimitReader(resp.Body, maxProbeBody)
	mediaType, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	var raw []byte
	switch mediaType {
	case "application/json":
		b, err := io.ReadAll(body)
		if err != nil {
			return "", err
		}
		raw = b
	case "text/event-stream":
		b, err := firstSSEData(body)
		if err != nil {
			return "", err
		}
		raw = b
	default:
		return "", fmt.Errorf("unexpected content type %q", mediaType)
	}
	var msg struct {
		Result *struct {
			ProtocolVersion string `json:"protocolVersion"`
		} `json:"result"`
		Error *struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if err := json.Unmarshal(raw, &msg); err != nil {
		return "", fmt.Errorf("decoding answer: %w", err)
	}
	if msg.Error != nil {
		return "", fmt.Errorf("JSON-RPC error %d: %s", msg.Error.Code, msg.Error.Message)
	}
	if msg.Result == nil {
		return "", errors.New("answer has no result")
	}
	return msg.Result.ProtocolVersion, nil
}

// firstSSEData returns the data of the first SSE event that carries an id
// (a response, not a notification).
func firstSSEData(r io.Reader) ([]byte, error) {
	events := wire.NewEventReader(r, &wire.Cursor{}, maxProbeBody)
	for {
		data, err := events.Next()
		switch {
		case err == io.EOF:
			return nil, errors.New("stream ended without a response")
		case err != nil:
			return nil, err
		case isResponse(data):
			return data, nil
		}
	}
}

func isResponse(b []byte) bool {
	var m struct {
		ID json.RawMessage `json:"id"`
	}
	return json.Unmarshal(b, &m) == nil && len(m.ID) > 0 && string(m.ID) != "null"
}

// probeSSE opens a throwaway legacy-SSE session with hdr and closes it.
func (srv *remote) probeSSE(ctx context.Context, hdr http.Header) error {
	s := newSession(srv, "probe", hdr)
	tr, err := s.newSSE()
	if err != nil {
		return err
	}
	cli := client.NewClient(tr, client.WithProtocolVersion(mcp.LATEST_LEGACY_PROTOCOL_VERSION))
	defer func() { _ = cli.Close() }()
	if err := s.start(ctx, cli); err != nil {
		return err
	}
	_, err = s.initialize(ctx, cli)
	return err
}

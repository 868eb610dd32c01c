package mcpclient

import (
	"context"
	"fmt"
	"net/http"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
)

// Probe checks that server answers, for health reporting; ctx carries the
// deadline. http and sse: a throwaway mcp-go session with hdr (initialize,
// then Close; an http session is DELETEd with hdr too). stdio: the
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

// probeHTTP opens a throwaway Streamable HTTP session with hdr through
// mcp-go's client (initialize, then the DELETE of Close, which the
// session's round tripper sends with hdr too), without a GET stream.
func (srv *remote) probeHTTP(ctx context.Context, hdr http.Header) error {
	s := newSession(srv, "probe", hdr)
	tr, err := transport.NewStreamableHTTP(srv.spec.URL,
		transport.WithHTTPBasicClient(s.httpClient()),
		transport.WithHTTPHeaders(flatten(hdr)),
		transport.WithHTTPLogger(s.slog()),
	)
	if err != nil {
		return err
	}
	return s.probe(ctx, tr)
}

// probeSSE opens a throwaway legacy-SSE session with hdr and closes it.
func (srv *remote) probeSSE(ctx context.Context, hdr http.Header) error {
	s := newSession(srv, "probe", hdr)
	tr, err := s.newSSE()
	if err != nil {
		return err
	}
	return s.probe(ctx, tr)
}

// probe starts a client on tr, initializes it and closes it.
func (s *session) probe(ctx context.Context, tr transport.Interface) error {
	cli := client.NewClient(tr, client.WithProtocolVersion(mcp.LATEST_LEGACY_PROTOCOL_VERSION))
	defer func() { _ = cli.Close() }()
	if err := s.start(ctx, cli); err != nil {
		return err
	}
	_, err := s.initialize(ctx, cli)
	return err
}

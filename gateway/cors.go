package gateway

import (
	"net/http"
	"strings"

	"github.com/rs/cors"

	"github.com/pallasgw/pallasgw/gateway/config"
)

// CORS for the browser routes (the agents' MCP endpoints and the
// registry): a page on another origin that the Origin guard lets through
// (an allowed_origins entry, or a loopback page calling a loopback host)
// can call an agent with an MCP SDK. github.com/rs/cors does the protocol
// (preflight answers, the origin echoed with Vary: Origin, exposed headers,
// max age); the gateway decides which origins, as it always did: the Origin
// guard runs first and refuses the others with 403, so they never see a
// CORS header. A preflight is answered before inbound auth: browsers send it
// without credentials.

// corsRequestHeaders are the request headers a page may send: what MCP
// clients send (the Streamable HTTP transport's, the 2026-07-28 routing
// headers and Last-Event-ID) and Authorization. Mcp-Param-<name> headers
// (SEP-2243) are allowed by prefix (corsHeadersAllowed), and so is every
// header the loaded config forwards (the inbound names of the servers' and
// providers' forward_headers, forwardedHeaders): a browser UI sends the
// per-user headers the operator set up forwarding for. Any other header
// would be dropped by the gateway anyway; its preflight is refused so that
// a page learns that at once, not from a downstream that never got it.
var corsRequestHeaders = []string{
	"Authorization", "Content-Type", "Accept", "Mcp-Session-Id", "MCP-Protocol-Version",
	"Mcp-Method", "Mcp-Name", "Last-Event-ID", "X-Request-Id", "traceparent", "tracestate",
}

const corsParamPrefix = "mcp-param-"

// corsExposedHeaders are the response headers a page's MCP client reads.
var corsExposedHeaders = []string{
	"Mcp-Session-Id", "MCP-Protocol-Version", "WWW-Authenticate", "X-Request-Id", "Retry-After",
}

// corsMethods are the agent endpoints' methods.
var corsMethods = []string{http.MethodGet, http.MethodPost, http.MethodDelete}

// corsMaxAge is how long a browser may cache a preflight answer, in seconds.
const corsMaxAge = 600

var corsAllowed = func() map[string]bool {
	m := make(map[string]bool, len(corsRequestHeaders))
	for _, h := range corsRequestHeaders {
		m[strings.ToLower(h)] = true
	}
	return m
}()

// forwardedHeaders are the lower-cased inbound header names cfg forwards:
// the keys of every server's and provider's forward_headers.
func forwardedHeaders(cfg *config.Config) map[string]bool {
	m := map[string]bool{}
	for _, s := range cfg.MCP.Servers {
		for in := range s.ForwardHeaders {
			m[strings.ToLower(in)] = true
		}
	}
	for _, p := range cfg.Models.Providers {
		for in := range p.ForwardHeaders {
			m[strings.ToLower(in)] = true
		}
	}
	return m
}

// corsHeadersAllowed reports whether every header a preflight asks for
// (Access-Control-Request-Headers, comma-separated) may be sent: an MCP
// header, or one of forwarded.
func corsHeadersAllowed(requested []string, forwarded map[string]bool) bool {
	for _, line := range requested {
		for h := range strings.SplitSeq(line, ",") {
			h = strings.ToLower(strings.TrimSpace(h))
			if h != "" && !corsAllowed[h] && !forwarded[h] && (!strings.HasPrefix(h, corsParamPrefix) || len(h) == len(corsParamPrefix)) {
				return false
			}
		}
	}
	return true
}

// browserCORS wraps h, a route behind the Origin guard, with CORS. rs/cors
// allows every header a preflight names, once corsHeadersAllowed has
// checked them against the MCP headers and forwarded() (the current
// snapshot's forwarded headers, which a reload changes): rs/cors matches
// header names fixed at construction and cannot express the Mcp-Param-
// prefix. A preflight asking for another header is answered without CORS
// headers, which the browser takes as a refusal.
func browserCORS(h http.Handler, forwarded func() map[string]bool) http.Handler {
	c := cors.New(cors.Options{
		// The Origin guard ran: any Origin that reaches here is allowed.
		AllowOriginVaryRequestFunc: func(*http.Request, string) (bool, []string) { return true, nil },
		AllowedMethods:             corsMethods,
		AllowedHeaders:             []string{"*"},
		ExposedHeaders:             corsExposedHeaders,
		MaxAge:                     corsMaxAge,
		OptionsSuccessStatus:       http.StatusNoContent,
	})
	withCORS := c.Handler(h)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodOptions && r.Header.Get("Origin") != "" && r.Header.Get("Access-Control-Request-Method") != "" &&
			!corsHeadersAllowed(r.Header.Values("Access-Control-Request-Headers"), forwarded()) {
			w.Header().Add("Vary", "Origin, Access-Control-Request-Method, Access-Control-Request-Headers")
			w.WriteHeader(http.StatusNoContent)
			return
		}
		withCORS.ServeHTTP(w, r)
	})
}

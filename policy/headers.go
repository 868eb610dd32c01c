package policy

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"net/http"
	"sort"
	"strings"

	"go.uber.org/zap"

	"github.com/pallasgw/pallasgw/metrics"
)

// MaxHeaderValueBytes is the longest header value Compose sends.
const MaxHeaderValueBytes = 8192

// Reasons a header is dropped by Compose; the reason label of
// pallasgw_forwarded_header_rejections_total.
const (
	ReasonInvalidCharacters = "invalid_characters" // CR, LF, NUL or another control byte
	ReasonTooLong           = "too_long"           // over MaxHeaderValueBytes
	ReasonBlocked           = "blocked"            // name on the Blocklist
	ReasonInvalidName       = "invalid_name"       // name is not an RFC 7230 token
)

// Log field keys of this package.
const (
	fieldServer = "server"
	fieldHeader = "header"
	fieldReason = "reason"
)

const authorization = "Authorization"

// HeaderRules are the outbound header settings of one downstream server or
// LLM provider, as its config states them.
type HeaderRules struct {
	Server             string            // metrics and log label; a config name, never request data
	Static             map[string]string // step 1: always sent; values are secrets
	Forward            map[string]string // step 2: inbound name -> outbound name; default-deny
	ForwardInboundAuth bool              // step 3: honoured only when Compose allows inbound auth
	// Blocked are names blocked for this server alone (its
	// extra_blocked_headers), beside the Composer's list; nil: none.
	Blocked *Blocklist
}

// Composer builds outbound headers. The zero value is
// usable: a nil Blocklist means the built-in list, nil Metrics and Logger
// record nothing. A Composer is safe for concurrent use.
type Composer struct {
	Blocklist *Blocklist
	Metrics   *metrics.Metrics
	Logger    *zap.Logger
}

// Compose returns the headers to send to r's server for one request whose
// headers are inbound. allowInboundAuth is false in auth.mode tokens: the
// caller's Authorization (the gateway's own token) then never travels,
// neither by ForwardInboundAuth nor by a forward_headers mapping whose source
// is Authorization.
//
// Precedence, per outbound name compared case-insensitively:
//  1. a Static name is owned by the static value (an empty static value
//     sends nothing but still keeps forwarded values out);
//  2. a Forward mapping whose inbound header is present and non-empty owns
//     its target; mappings are applied in sorted source order, so when two
//     map to one target the first wins (Validate reports that config). A
//     value mapped to Authorization that is a bare token (no space, so no
//     scheme) is sent as "Bearer <token>";
//  3. the inbound Authorization, when r.ForwardInboundAuth and
//     allowInboundAuth and nothing above owns Authorization.
//
// A name that is blocked or not a valid token, and a value that fails
// SanitizeValue, is dropped (the name stays owned, so a lower step cannot
// fill it in), logged without its value and counted. Output names are
// canonical. An inbound header that no mapping lists never leaves.
func (c *Composer) Compose(r HeaderRules, inbound http.Header, allowInboundAuth bool) http.Header {
	out := make(http.Header, len(r.Static)+len(r.Forward)+1)
	owned := make(map[string]struct{}, len(r.Static)+len(r.Forward)+1)

	for _, name := range sortedKeys(r.Static) {
		cn := http.CanonicalHeaderKey(name)
		if _, dup := owned[cn]; dup {
			continue
		}
		owned[cn] = struct{}{}
		if v := r.Static[name]; v != "" {
			c.set(out, r, cn, v)
		}
	}

	for _, src := range sortedKeys(r.Forward) {
		if !allowInboundAuth && asciiLower(src) == "authorization" {
			continue
		}
		target := http.CanonicalHeaderKey(r.Forward[src])
		if _, taken := owned[target]; taken {
			continue
		}
		v, ok := firstValue(inbound, src)
		if !ok {
			continue
		}
		owned[target] = struct{}{}
		if target == authorization && !strings.Contains(v, " ") {
			v = "Bearer " + v
		}
		c.set(out, r, target, v)
	}

	if r.ForwardInboundAuth && allowInboundAuth {
		if _, taken := owned[authorization]; !taken {
			if v, ok := firstValue(inbound, authorization); ok {
				c.set(out, r, authorization, v)
			}
		}
	}
	return out
}

// set adds name: v to out unless the name or the value is rejected.
func (c *Composer) set(out http.Header, r HeaderRules, name, v string) {
	reason := ""
	switch {
	case !validHeaderName(name):
		reason = ReasonInvalidName
	case c.blocklist().Blocked(name) || r.Blocked.Blocked(name):
		reason = ReasonBlocked
	default:
		if r, ok := SanitizeValue(v); !ok {
			reason = r
		}
	}
	if reason == "" {
		out[name] = []string{v}
		return
	}
	c.reject(r.Server, name, reason)
}

func (c *Composer) reject(server, name, reason string) {
	if c.Metrics != nil {
		c.Metrics.ForwardedHeaderRejection.WithLabelValues(server, reason).Inc()
	}
	if c.Logger != nil {
		if !validHeaderName(name) {
			name = "<invalid>" // an invalid name could itself carry a value or control bytes
		}
		c.Logger.Warn("outbound header dropped",
			zap.String(fieldServer, server), zap.String(fieldHeader, name), zap.String(fieldReason, reason))
	}
}

func (c *Composer) blocklist() *Blocklist {
	if c.Blocklist != nil {
		return c.Blocklist
	}
	return defaultBlocklist
}

// firstValue returns the first value of inbound header name. Several values
// of one header are not joined: only the first travels, so that a caller
// cannot smuggle a second credential by repeating a header. An empty value
// counts as absent.
func firstValue(h http.Header, name string) (string, bool) {
	vs := h.Values(name)
	if len(vs) == 0 || vs[0] == "" {
		return "", false
	}
	return vs[0], true
}

// SanitizeValue reports whether v may be sent as a header value. It returns
// ReasonTooLong for values over MaxHeaderValueBytes (checked first) and
// ReasonInvalidCharacters for values holding CR, LF, NUL or any other
// control byte except horizontal tab (RFC 7230 field-value; net/http's
// transport would fail the whole request on them). ok is true and reason
// empty for an acceptable value.
func SanitizeValue(v string) (reason string, ok bool) {
	if len(v) > MaxHeaderValueBytes {
		return ReasonTooLong, false
	}
	for i := 0; i < len(v); i++ {
		if b := v[i]; (b < 0x20 && b != '\t') || b == 0x7f {
			return ReasonInvalidCharacters, false
		}
	}
	return "", true
}

// Fingerprint returns a stable SHA-256 hex digest of h's canonical names and
// all their values, independent of map order, for keying pooled downstream
// sessions by the credentials they carry. Names and values are
// length-prefixed, so no two different headers share an input. The digest
// is not a secret-safe hash of low-entropy values (a tenant id could be
// guessed from it): keep it in memory, never log or export it.
func Fingerprint(h http.Header) string {
	raw := make([]string, 0, len(h))
	for name := range h {
		raw = append(raw, name)
	}
	sort.Strings(raw) // "x-a" and "X-A" keys merge in a fixed order
	merged := make(map[string][]string, len(h))
	for _, name := range raw {
		cn := http.CanonicalHeaderKey(name)
		merged[cn] = append(merged[cn], h[name]...)
	}
	names := make([]string, 0, len(merged))
	for n := range merged {
		names = append(names, n)
	}
	sort.Strings(names)

	d := sha256.New()
	d.Write([]byte("pallasgw-headers-v1\x00"))
	var n [8]byte
	field := func(s string) {
		binary.BigEndian.PutUint64(n[:], uint64(len(s)))
		d.Write(n[:])
		d.Write([]byte(s))
	}
	for _, name := range names {
		vs := merged[name]
		field(name)
		binary.BigEndian.PutUint64(n[:], uint64(len(vs)))
		d.Write(n[:])
		for _, v := range vs {
			field(v)
		}
	}
	return hex.EncodeToString(d.Sum(nil))
}

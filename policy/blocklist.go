package policy

import (
	"fmt"
	"net/http"
	"sort"
	"strings"
)

// builtinBlocked are the outbound header names no rule may produce. A trailing "*" makes an entry a prefix pattern.
var builtinBlocked = []string{
	// Hop-by-hop (RFC 7230 §6.1 and RFC 2616 §13.5.1).
	"Connection", "Keep-Alive", "Proxy-Authenticate", "Proxy-Authorization",
	"TE", "Trailer", "Trailers", "Transfer-Encoding", "Upgrade",
	// Set by the transport or describing the body the gateway sends.
	"Host", "Content-Length", "Content-Type", "Accept",
	// Ambient credentials and state of the caller's browser.
	"Cookie", "Set-Cookie",
	// Proxy and client-address headers downstreams may trust.
	"Proxy-*", "Forwarded", "X-Forwarded-*", "X-Real-IP",
	// MCP transport headers (session id, protocol version) and SSE resumption.
	"Mcp-*", "Last-Event-ID",
}

// Blocklist is a case-insensitive set of header names that must never be
// sent downstream. Entries ending in "*" are prefix patterns ("Proxy-*"
// blocks every name starting with "proxy-"); all other entries are exact
// names. A Blocklist is immutable and safe for concurrent use.
type Blocklist struct {
	exact    map[string]struct{} // ASCII-lower-cased names
	prefixes []string            // ASCII-lower-cased, without the "*"
}

// defaultBlocklist is used when a Composer has no Blocklist.
var defaultBlocklist = NewBlocklist(nil)

// NewBlocklist returns the built-in list plus extra, the
// operator's policy.extra_blocked_headers. Extra entries follow the same
// syntax: exact names, or a prefix ending in "*". Surrounding spaces are
// trimmed and empty entries ignored; a lone "*" blocks every name.
func NewBlocklist(extra []string) *Blocklist {
	return newBlocklist(builtinBlocked, extra)
}

// ExtraBlocklist returns a list of names alone, without the built-in ones:
// one server's or provider's extra_blocked_headers, checked in
// HeaderRules.Blocked beside the Composer's list. It returns nil when
// names holds no entry.
func ExtraBlocklist(names []string) *Blocklist {
	b := newBlocklist(nil, names)
	if len(b.exact) == 0 && len(b.prefixes) == 0 {
		return nil
	}
	return b
}

func newBlocklist(lists ...[]string) *Blocklist {
	b := &Blocklist{exact: make(map[string]struct{})}
	for _, list := range lists {
		for _, e := range list {
			e = strings.TrimSpace(e)
			switch {
			case e == "":
			case strings.HasSuffix(e, "*"):
				b.prefixes = append(b.prefixes, asciiLower(strings.TrimSuffix(e, "*")))
			default:
				b.exact[asciiLower(e)] = struct{}{}
			}
		}
	}
	return b
}

// Blocked reports whether name, compared case-insensitively, is on the list.
// A nil Blocklist blocks nothing.
func (b *Blocklist) Blocked(name string) bool {
	if b == nil {
		return false
	}
	n := asciiLower(name)
	if _, ok := b.exact[n]; ok {
		return true
	}
	for _, p := range b.prefixes {
		if strings.HasPrefix(n, p) {
			return true
		}
	}
	return false
}

// RuleError is one problem of a HeaderRules found by Validate. Field is
// "headers" (static) or "forward_headers" and Key the map key at fault, so
// that a config loader can point at the line. It never holds a value.
type RuleError struct {
	Field string
	Key   string
	Msg   string
}

func (e *RuleError) Error() string { return e.Field + ": " + e.Key + ": " + e.Msg }

// Validate reports every problem of r against b, in a stable order: names
// that are not RFC 7230 tokens, static names and forward targets on the
// blocked list (b, or r's own Blocked), two static names or two forward targets that differ only in
// case, and static values Compose would drop. Values are never quoted.
// Validate does not complain about a forward target that is also a static
// name: that is legal, and the static value wins.
func (b *Blocklist) Validate(r HeaderRules) []error {
	var errs []error
	add := func(field, key, format string, args ...any) {
		errs = append(errs, &RuleError{Field: field, Key: key, Msg: fmt.Sprintf(format, args...)})
	}

	seen := make(map[string]string) // canonical static name -> key
	for _, name := range sortedKeys(r.Static) {
		switch {
		case !validHeaderName(name):
			add("headers", name, "not a valid header name")
			continue
		case b.Blocked(name) || r.Blocked.Blocked(name):
			add("headers", name, "%q is a blocked header", name)
		}
		cn := http.CanonicalHeaderKey(name)
		if prev, dup := seen[cn]; dup {
			add("headers", name, "same header as %q", prev)
		}
		seen[cn] = name
		if reason, ok := SanitizeValue(r.Static[name]); !ok {
			add("headers", name, "value rejected: %s", reasonText(reason))
		}
	}

	targets := make(map[string]string) // canonical target -> source
	for _, src := range sortedKeys(r.Forward) {
		target := r.Forward[src]
		if !validHeaderName(src) {
			add("forward_headers", src, "not a valid header name")
		}
		switch {
		case !validHeaderName(target):
			add("forward_headers", src, "target %q is not a valid header name", nameOnly(target))
			continue
		case b.Blocked(target) || r.Blocked.Blocked(target):
			add("forward_headers", src, "target %q is a blocked header", target)
		}
		ct := http.CanonicalHeaderKey(target)
		if prev, dup := targets[ct]; dup {
			add("forward_headers", src, "target %q is also the target of %q", target, nameOnly(prev))
		}
		targets[ct] = src
	}
	return errs
}

// nameOnly is a header name as a message may quote it: a name fused with
// its value by a missing space ("X-Api-Key:abc") is cut at the colon, as
// the rest may be a secret.
func nameOnly(name string) string {
	if i := strings.IndexByte(name, ':'); i >= 0 {
		return name[:i] + ":…"
	}
	return name
}

func reasonText(reason string) string {
	if reason == ReasonTooLong {
		return fmt.Sprintf("longer than %d bytes", MaxHeaderValueBytes)
	}
	return "contains control characters (CR, LF, NUL, ...)"
}

// validHeaderName reports whether s is an RFC 7230 token.
func validHeaderName(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if !isTokenChar(s[i]) {
			return false
		}
	}
	return true
}

func isTokenChar(c byte) bool {
	switch {
	case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		return true
	}
	return strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0
}

// asciiLower lower-cases ASCII letters only, so that no Unicode folding can
// make two different byte strings compare equal.
func asciiLower(s string) string {
	for i := 0; i < len(s); i++ {
		if 'A' <= s[i] && s[i] <= 'Z' {
			b := []byte(s)
			for j := i; j < len(b); j++ {
				if 'A' <= b[j] && b[j] <= 'Z' {
					b[j] += 'a' - 'A'
				}
			}
			return string(b)
		}
	}
	return s
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

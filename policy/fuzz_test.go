package policy

import (
	"net/http"
	"strings"
	"testing"
)

// FuzzCompose feeds random inbound headers, values and one random
// forward_headers mapping through Compose and checks what may leave: only
// static names, mapping targets and (when allowed) Authorization; never a
// blocked or invalid name, a control byte, a value over 8 KiB, a second
// value, an unlisted inbound header, or the caller's Authorization when
// inbound auth is not allowed.
func FuzzCompose(f *testing.F) {
	f.Add("X-Tenant", "X-Tenant-ID", "X-Tenant", "t1", "Bearer a", true, true)
	f.Add("X-Up", "Authorization", "X-Up", "Bearer up", "Bearer caller", true, true)
	f.Add("Authorization", "X-Caller", "authorization", "v", "Bearer caller", false, false)
	f.Add("X-A", "cookie", "X-A", "c=1", "", false, true)
	f.Add("X-A", "x-forwarded-for", "x-a", "1.2.3.4", "", false, true)
	f.Add("X-A", "X-Internal-Key", "X-A", "v", "", false, true)
	f.Add("X-A", "Mcp-Session-Id", "X-A", "sess", "", false, true)
	f.Add("X-A", "Bad Name", "X-A", "v", "", false, true)
	f.Add("X-A", "X-B", "X-A", "a\r\nInjected: 1", "Bearer \x00", true, true)
	f.Add("X-A", "X-B", "X-A", strings.Repeat("v", 8193), strings.Repeat("b", 9000), true, true)
	f.Add("X-A", "X-Unlisted-Marker", "X-Unlisted-Marker", "m", "", false, true)
	f.Add("X-A", "x-api-key", "X-A", "override", "", true, true)

	blocklist := NewBlocklist([]string{"X-Internal-*"})
	f.Fuzz(func(t *testing.T, src, target, inName, inValue, authValue string, fwdAuth, allowAuth bool) {
		rules := HeaderRules{
			Server:             "fuzz",
			Static:             map[string]string{"X-Api-Key": "static"},
			Forward:            map[string]string{"X-Tenant-ID": "X-Tenant-ID", "X-Evil": "Cookie", src: target},
			ForwardInboundAuth: fwdAuth,
		}
		inbound := http.Header{}
		for _, name := range []string{inName, "X-Tenant-ID", "X-Evil", src} {
			if asciiLower(name) == "authorization" {
				continue // Authorization carries authValue only, so a leak is recognisable
			}
			inbound[name] = append(inbound[name], inValue, "second")
			inbound.Add(name, inValue)
		}
		inbound.Add("Authorization", authValue)
		inbound.Add("X-Unlisted-Marker", "marker")

		out := (&Composer{Blocklist: blocklist}).Compose(rules, inbound, allowAuth)

		allowed := map[string]bool{
			"X-Api-Key": true, "X-Tenant-Id": true, http.CanonicalHeaderKey(target): true,
		}
		if fwdAuth && allowAuth {
			allowed["Authorization"] = true
		}
		for name, vs := range out {
			switch {
			case !allowed[name]:
				t.Errorf("unlisted header %q left", name)
			case !validHeaderName(name) || name != http.CanonicalHeaderKey(name):
				t.Errorf("invalid or non-canonical name %q", name)
			case blocklist.Blocked(name):
				t.Errorf("blocked header %q left", name)
			case len(vs) != 1:
				t.Errorf("header %q has %d values", name, len(vs))
			}
			for _, v := range vs {
				if len(v) > MaxHeaderValueBytes || strings.ContainsAny(v, "\r\n\x00") {
					t.Errorf("header %q carries a bad value (%d bytes)", name, len(v))
				}
			}
		}
		if got := out["X-Api-Key"]; len(got) != 1 || got[0] != "static" {
			t.Errorf("static X-Api-Key = %q, want static to win", got)
		}
		if !allowAuth && authValue != "" && authValue != inValue && authValue != "static" && authValue != "second" && authValue != "marker" {
			for name, vs := range out {
				for _, v := range vs {
					if v == authValue {
						t.Errorf("caller Authorization left as %q with inbound auth not allowed", name)
					}
				}
			}
		}
	})
}

// FuzzSanitizeValue checks SanitizeValue against its definition.
func FuzzSanitizeValue(f *testing.F) {
	for _, s := range []string{"", "Bearer abc", "a\rb", "a\nb", "a\x00b", "\t", "\x7f", "é", strings.Repeat("x", 8192), strings.Repeat("x", 8193)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, v string) {
		reason, ok := SanitizeValue(v)
		bad := strings.IndexFunc(v, func(r rune) bool { return (r < 0x20 && r != '\t') || r == 0x7f }) >= 0
		switch {
		case ok && (reason != "" || len(v) > MaxHeaderValueBytes || bad):
			t.Errorf("accepted a bad value (%d bytes, reason %q)", len(v), reason)
		case !ok && len(v) > MaxHeaderValueBytes && reason != ReasonTooLong:
			t.Errorf("long value: reason %q", reason)
		case !ok && len(v) <= MaxHeaderValueBytes && (!bad || reason != ReasonInvalidCharacters):
			t.Errorf("rejected a good value or wrong reason %q", reason)
		}
	})
}

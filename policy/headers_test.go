package policy

import (
	"net/http"
	"reflect"
	"strings"
	"testing"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/pallasgw/pallasgw/metrics"
)

func TestCompose(t *testing.T) {
	const callerBearer = "Bearer caller-token"
	tests := []struct {
		name       string
		rules      HeaderRules
		extra      []string
		inbound    http.Header
		allowAuth  bool
		want       http.Header
		wantReject map[string]float64 // reason -> count for server "s"
	}{
		{
			name:      "bearer reaches with forward_inbound_auth in passthrough",
			rules:     HeaderRules{ForwardInboundAuth: true},
			inbound:   hdr("Authorization", callerBearer),
			allowAuth: true,
			want:      hdr("Authorization", callerBearer),
		},
		{
			name:      "bearer stays without forward_inbound_auth",
			rules:     HeaderRules{},
			inbound:   hdr("Authorization", callerBearer),
			allowAuth: true,
			want:      hdr(),
		},
		{
			name:      "tokens mode forwards no Authorization despite forward_inbound_auth",
			rules:     HeaderRules{ForwardInboundAuth: true},
			inbound:   hdr("Authorization", callerBearer),
			allowAuth: false,
			want:      hdr(),
		},
		{
			name:      "tokens mode ignores a mapping whose source is Authorization",
			rules:     HeaderRules{Forward: map[string]string{"authorization": "X-Caller-Auth"}},
			inbound:   hdr("Authorization", callerBearer),
			allowAuth: false,
			want:      hdr(),
		},
		{
			name:      "passthrough mode honours a mapping whose source is Authorization",
			rules:     HeaderRules{Forward: map[string]string{"Authorization": "X-Caller-Auth"}},
			inbound:   hdr("Authorization", callerBearer),
			allowAuth: true,
			want:      hdr("X-Caller-Auth", callerBearer),
		},
		{
			name:      "unlisted inbound headers never arrive",
			rules:     HeaderRules{Static: map[string]string{"X-Api-Key": "k"}, Forward: map[string]string{"X-Tenant-ID": "X-Tenant-ID"}},
			inbound:   hdr("Cookie", "session=1", "X-Other", "o", "Authorization", callerBearer, "X-Tenant-ID", "t1"),
			allowAuth: true,
			want:      hdr("X-Api-Key", "k", "X-Tenant-Id", "t1"),
		},
		{
			name:      "static beats forwarded, case-insensitively",
			rules:     HeaderRules{Static: map[string]string{"x-tenant-id": "fixed"}, Forward: map[string]string{"X-Tenant": "X-TENANT-ID"}},
			inbound:   hdr("X-Tenant", "from-caller"),
			allowAuth: true,
			want:      hdr("X-Tenant-Id", "fixed"),
		},
		{
			name:      "empty static value sends nothing and keeps forwarded out",
			rules:     HeaderRules{Static: map[string]string{"X-Api-Key": ""}, Forward: map[string]string{"X-Api-Key": "X-Api-Key"}},
			inbound:   hdr("X-Api-Key", "from-caller"),
			allowAuth: true,
			want:      hdr(),
		},
		{
			name:      "mapping to Authorization beats forward_inbound_auth",
			rules:     HeaderRules{ForwardInboundAuth: true, Forward: map[string]string{"X-Upstream-Authorization": "Authorization"}},
			inbound:   hdr("Authorization", callerBearer, "X-Upstream-Authorization", "Bearer upstream"),
			allowAuth: true,
			want:      hdr("Authorization", "Bearer upstream"),
		},
		{
			name:      "absent mapping source lets forward_inbound_auth fill Authorization",
			rules:     HeaderRules{ForwardInboundAuth: true, Forward: map[string]string{"X-Upstream-Authorization": "Authorization"}},
			inbound:   hdr("Authorization", callerBearer),
			allowAuth: true,
			want:      hdr("Authorization", callerBearer),
		},
		{
			name:      "static Authorization beats forward_inbound_auth",
			rules:     HeaderRules{ForwardInboundAuth: true, Static: map[string]string{"authorization": "Bearer static"}},
			inbound:   hdr("Authorization", callerBearer),
			allowAuth: true,
			want:      hdr("Authorization", "Bearer static"),
		},
		{
			name:      "only the first of several inbound values travels",
			rules:     HeaderRules{Forward: map[string]string{"X-Tenant-ID": "X-Tenant-ID"}},
			inbound:   hdr("X-Tenant-ID", "first", "X-Tenant-ID", "second"),
			allowAuth: true,
			want:      hdr("X-Tenant-Id", "first"),
		},
		{
			name:      "missing and empty inbound headers are skipped",
			rules:     HeaderRules{Forward: map[string]string{"X-A": "X-A", "X-B": "X-B"}},
			inbound:   hdr("X-B", ""),
			allowAuth: true,
			want:      hdr(),
		},
		{
			name:      "output names are canonical",
			rules:     HeaderRules{Static: map[string]string{"x-api-key": "k"}, Forward: map[string]string{"x-tenant-id": "x-upstream-tenant"}},
			inbound:   hdr("X-Tenant-Id", "t"),
			allowAuth: true,
			want:      http.Header{"X-Api-Key": {"k"}, "X-Upstream-Tenant": {"t"}},
		},
		{
			name: "blocked names never go out",
			rules: HeaderRules{
				Static: map[string]string{"Cookie": "c", "host": "h"},
				Forward: map[string]string{
					"X-A": "x-forwarded-for", "X-B": "Mcp-Session-Id", "X-C": "PROXY-Authorization",
					"X-D": "X-Internal-Thing", "X-E": "Transfer-Encoding", "X-F": "X-Ok",
				},
			},
			extra:      []string{"x-internal-*"},
			inbound:    hdr("X-A", "1", "X-B", "2", "X-C", "3", "X-D", "4", "X-E", "5", "X-F", "6"),
			allowAuth:  true,
			want:       hdr("X-Ok", "6"),
			wantReject: map[string]float64{ReasonBlocked: 7},
		},
		{
			name:      "a bare token mapped to Authorization gets Bearer in front",
			rules:     HeaderRules{Forward: map[string]string{"X-Maas-Token": "Authorization"}},
			inbound:   hdr("X-Maas-Token", "tok-123"),
			allowAuth: true,
			want:      hdr("Authorization", "Bearer tok-123"),
		},
		{
			name:      "a value with its scheme mapped to Authorization is sent as it is",
			rules:     HeaderRules{Forward: map[string]string{"X-Up": "authorization"}},
			inbound:   hdr("X-Up", "Basic dXNlcjpwdw=="),
			allowAuth: true,
			want:      hdr("Authorization", "Basic dXNlcjpwdw=="),
		},
		{
			name:      "a bare token mapped elsewhere stays bare",
			rules:     HeaderRules{Forward: map[string]string{"X-Maas-Token": "X-Api-Key"}},
			inbound:   hdr("X-Maas-Token", "tok-123"),
			allowAuth: true,
			want:      hdr("X-Api-Key", "tok-123"),
		},
		{
			name: "a server's own blocked names beside the global list",
			rules: HeaderRules{Static: map[string]string{"X-Internal": "s"}, Forward: map[string]string{"X-A": "X-Corp-Tenant", "X-B": "X-Ok"},
				Blocked: ExtraBlocklist([]string{"x-internal", "X-Corp-*"})},
			inbound:    hdr("X-A", "1", "X-B", "2"),
			allowAuth:  true,
			want:       hdr("X-Ok", "2"),
			wantReject: map[string]float64{ReasonBlocked: 2},
		},
		{
			name:       "invalid target names are dropped",
			rules:      HeaderRules{Forward: map[string]string{"X-A": "Bad Name", "X-B": "X-Bad:Colon", "X-C": ""}},
			inbound:    hdr("X-A", "1", "X-B", "2", "X-C", "3"),
			allowAuth:  true,
			want:       hdr(),
			wantReject: map[string]float64{ReasonInvalidName: 3},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := metrics.New("test")
			tt.rules.Server = "s"
			c := &Composer{Blocklist: NewBlocklist(tt.extra), Metrics: m}
			got := c.Compose(tt.rules, tt.inbound, tt.allowAuth)
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("Compose = %v, want %v", got, tt.want)
			}
			for _, reason := range []string{ReasonBlocked, ReasonInvalidName, ReasonInvalidCharacters, ReasonTooLong} {
				if v := counterValue(t, m.ForwardedHeaderRejection, "s", reason); v != tt.wantReject[reason] {
					t.Errorf("rejections{reason=%q} = %v, want %v", reason, v, tt.wantReject[reason])
				}
			}
		})
	}
}

func TestComposeDropsBadValues(t *testing.T) {
	long := strings.Repeat("a", MaxHeaderValueBytes+1)
	tests := []struct {
		name   string
		value  string
		reason string // "" = passes
	}{
		{"carriage return", "ok\rX-Injected: 1", ReasonInvalidCharacters},
		{"line feed", "ok\nX-Injected: 1", ReasonInvalidCharacters},
		{"NUL", "ok\x00", ReasonInvalidCharacters},
		{"other control byte", "ok\x1b[31m", ReasonInvalidCharacters},
		{"DEL", "ok\x7f", ReasonInvalidCharacters},
		{"over 8 KiB", long, ReasonTooLong},
		{"over 8 KiB with CR reports too_long", long + "\r", ReasonTooLong},
		{"exactly 8 KiB", long[:MaxHeaderValueBytes], ""},
		{"tab and UTF-8", "a\tb é", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := metrics.New("test")
			core, logs := observer.New(zapcore.DebugLevel)
			c := &Composer{Metrics: m, Logger: zap.New(core)}
			rules := HeaderRules{Server: "argos", Forward: map[string]string{"X-In": "X-Out"}}
			got := c.Compose(rules, hdr("X-In", tt.value), true)

			if tt.reason == "" {
				if got.Get("X-Out") != tt.value || logs.Len() != 0 {
					t.Fatalf("value should pass: got %q, %d log lines", got.Get("X-Out"), logs.Len())
				}
				return
			}
			if len(got) != 0 {
				t.Fatalf("Compose = %q, want nothing", got)
			}
			if v := counterValue(t, m.ForwardedHeaderRejection, "argos", tt.reason); v != 1 {
				t.Errorf("rejections{argos,%s} = %v, want 1", tt.reason, v)
			}
			entries := logs.AllUntimed()
			if len(entries) != 1 {
				t.Fatalf("got %d log lines, want 1", len(entries))
			}
			fields := entries[0].ContextMap()
			want := map[string]any{"server": "argos", "header": "X-Out", "reason": tt.reason}
			if !reflect.DeepEqual(fields, want) {
				t.Errorf("log fields = %v, want %v (and never the value)", fields, want)
			}
		})
	}
}

func TestSanitizeValue(t *testing.T) {
	tests := []struct {
		name, value, reason string
		ok                  bool
	}{
		{"empty", "", "", true},
		{"plain", "Bearer abc", "", true},
		{"CR", "a\rb", ReasonInvalidCharacters, false},
		{"LF", "a\nb", ReasonInvalidCharacters, false},
		{"NUL", "a\x00b", ReasonInvalidCharacters, false},
		{"limit", strings.Repeat("x", 8192), "", true},
		{"over limit", strings.Repeat("x", 8193), ReasonTooLong, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			reason, ok := SanitizeValue(tt.value)
			if reason != tt.reason || ok != tt.ok {
				t.Errorf("SanitizeValue = (%q, %v), want (%q, %v)", reason, ok, tt.reason, tt.ok)
			}
		})
	}
}

func TestValidate(t *testing.T) {
	tests := []struct {
		name  string
		extra []string
		rules HeaderRules
		want  []string
	}{
		{
			name:  "valid rules",
			rules: HeaderRules{Static: map[string]string{"X-Api-Key": "k", "Authorization": "Bearer s"}, Forward: map[string]string{"X-Upstream-Authorization": "Authorization", "X-Tenant-ID": "X-Tenant-ID"}},
		},
		{
			name:  "blocked target",
			rules: HeaderRules{Forward: map[string]string{"X-Foo": "Cookie"}},
			want:  []string{`forward_headers: X-Foo: target "Cookie" is a blocked header`},
		},
		{
			name:  "blocked targets are case-insensitive and prefix patterns apply",
			rules: HeaderRules{Forward: map[string]string{"A": "cOOKIE", "B": "x-forwarded-host", "C": "PROXY-thing", "D": "mcp-session-id", "E": "te", "F": "Last-Event-Id"}},
			want: []string{
				`forward_headers: A: target "cOOKIE" is a blocked header`,
				`forward_headers: B: target "x-forwarded-host" is a blocked header`,
				`forward_headers: C: target "PROXY-thing" is a blocked header`,
				`forward_headers: D: target "mcp-session-id" is a blocked header`,
				`forward_headers: E: target "te" is a blocked header`,
				`forward_headers: F: target "Last-Event-Id" is a blocked header`,
			},
		},
		{
			name:  "extra_blocked_headers exact and prefix, case-insensitive",
			extra: []string{"X-Internal-Secret", " x-corp-* "},
			rules: HeaderRules{Forward: map[string]string{"A": "x-internal-secret", "B": "X-CORP-Tenant", "C": "X-Internal-Secret2"}},
			want: []string{
				`forward_headers: A: target "x-internal-secret" is a blocked header`,
				`forward_headers: B: target "X-CORP-Tenant" is a blocked header`,
			},
		},
		{
			name:  "a server's extra_blocked_headers beside the global list",
			extra: []string{"X-Global"},
			rules: HeaderRules{Static: map[string]string{"X-Own": "v"}, Forward: map[string]string{"A": "X-Global", "B": "x-own-2", "C": "X-Fine"},
				Blocked: ExtraBlocklist([]string{"X-Own", "X-Own-*"})},
			want: []string{
				`headers: X-Own: "X-Own" is a blocked header`,
				`forward_headers: A: target "X-Global" is a blocked header`,
				`forward_headers: B: target "x-own-2" is a blocked header`,
			},
		},
		{
			name:  "blocked static name",
			rules: HeaderRules{Static: map[string]string{"Host": "h"}},
			want:  []string{`headers: Host: "Host" is a blocked header`},
		},
		{
			name:  "invalid names",
			rules: HeaderRules{Static: map[string]string{"Bad Name": "v"}, Forward: map[string]string{"X-Ok": "X:Bad", "In Valid": "X-Fine"}},
			want: []string{
				`headers: Bad Name: not a valid header name`,
				`forward_headers: In Valid: not a valid header name`,
				`forward_headers: X-Ok: target "X:…" is not a valid header name`,
			},
		},
		{
			name:  "two forward targets differing in case",
			rules: HeaderRules{Forward: map[string]string{"A": "X-T", "B": "x-t"}},
			want:  []string{`forward_headers: B: target "x-t" is also the target of "A"`},
		},
		{
			name:  "static values Compose would drop, without the value",
			rules: HeaderRules{Static: map[string]string{"X-Crlf": "sec\r\nret", "X-Long": strings.Repeat("s", 9000)}},
			want: []string{
				`headers: X-Crlf: value rejected: contains control characters (CR, LF, NUL, ...)`,
				`headers: X-Long: value rejected: longer than 8192 bytes`,
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			errs := NewBlocklist(tt.extra).Validate(tt.rules)
			var got []string
			for _, e := range errs {
				got = append(got, e.Error())
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("Validate =\n  %q\nwant\n  %q", got, tt.want)
			}
		})
	}
}

func TestExtraBlocklist(t *testing.T) {
	if ExtraBlocklist(nil) != nil || ExtraBlocklist([]string{" ", ""}) != nil {
		t.Error("an empty list is not nil")
	}
	b := ExtraBlocklist([]string{"X-Secret"})
	if !b.Blocked("x-secret") || b.Blocked("Host") {
		t.Error("an extra list holds its names and nothing built in")
	}
	var none *Blocklist
	if none.Blocked("Host") {
		t.Error("a nil list blocks")
	}
}

func TestBlocked(t *testing.T) {
	b := NewBlocklist([]string{"X-Secret"})
	for name, want := range map[string]bool{
		"connection": true, "Keep-Alive": true, "proxy-authenticate": true, "Trailer": true, "TRAILERS": true,
		"upgrade": true, "Content-Length": true, "content-type": true, "Set-Cookie": true, "Forwarded": true,
		"X-Real-IP": true, "Accept": true, "Mcp-Protocol-Version": true, "x-secret": true,
		"Authorization": false, "X-Tenant-ID": false, "Proxy": false, "X-Forwarded": false, "Accept-Language": false,
	} {
		if got := b.Blocked(name); got != want {
			t.Errorf("Blocked(%q) = %v, want %v", name, got, want)
		}
	}
}

func TestFingerprint(t *testing.T) {
	a := hdr("X-Api-Key", "k", "Authorization", "Bearer t")
	b := http.Header{"authorization": {"Bearer t"}, "x-api-key": {"k"}}
	if Fingerprint(a) != Fingerprint(b) {
		t.Error("fingerprint depends on name case or order")
	}
	if Fingerprint(a) != Fingerprint(a.Clone()) {
		t.Error("fingerprint not stable")
	}
	different := []http.Header{
		hdr("X-Api-Key", "k2", "Authorization", "Bearer t"),
		hdr("X-Api-Key", "k"),
		hdr("X-Api-Keyk", ""),
		hdr("X-Api-Key", "k", "X-Api-Key", "Authorization"),
		{},
	}
	for _, h := range different {
		if Fingerprint(h) == Fingerprint(a) {
			t.Errorf("fingerprint of %v equals that of %v", h, a)
		}
	}
	fp := Fingerprint(a)
	if len(fp) != 64 || strings.Contains(fp, "Bearer") {
		t.Errorf("fingerprint %q is not a hex SHA-256", fp)
	}
}

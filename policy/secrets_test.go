package policy

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/pallasgw/pallasgw/metrics"
)

// TestNoSecretInLogsOrErrors drives every path of the package that logs or
// returns an error with secret-bearing inputs, then greps the encoded log
// output, the errors and the metrics exposition for the secrets.
func TestNoSecretInLogsOrErrors(t *testing.T) {
	secrets := []string{
		"static-SECRET-crlf", "static-SECRET-blocked", "static-SECRET-ok",
		"fwd-SECRET-lf", "fwd-SECRET-long", "fwd-SECRET-blocked", "fwd-SECRET-ok",
		"caller-SECRET-bearer", "token-SECRET-web", "token-SECRET-wrong", "admin-SECRET",
	}
	var buf bytes.Buffer
	log := bufferLogger(&buf)
	m := metrics.New("test")
	var errs []error

	rules := HeaderRules{
		Server: "argos",
		Static: map[string]string{
			"X-Api-Key": "static-SECRET-crlf\r\nX-Evil: 1",
			"Cookie":    "static-SECRET-blocked",
			"X-Ok":      "static-SECRET-ok",
		},
		Forward: map[string]string{
			"X-A": "X-Lf", "X-B": "X-Long", "X-C": "Host", "X-D": "X-Fwd-Ok", "X-E": "Bad Name",
		},
		ForwardInboundAuth: true,
	}
	inbound := hdr("X-A", "fwd-SECRET-lf\n", "X-B", "fwd-SECRET-long"+strings.Repeat("x", 9000),
		"X-C", "fwd-SECRET-blocked", "X-D", "fwd-SECRET-ok", "X-E", "fwd-SECRET-ok",
		"Authorization", "Bearer caller-SECRET-bearer\x00")
	c := &Composer{Metrics: m, Logger: log}
	out := c.Compose(rules, inbound, true)
	if out.Get("X-Fwd-Ok") != "fwd-SECRET-ok" || out.Get("X-Ok") != "static-SECRET-ok" || len(out) != 2 {
		t.Fatalf("Compose = %q", out)
	}
	errs = append(errs, NewBlocklist(nil).Validate(rules)...)

	a, err := NewAuthenticator(ModeTokens, []TokenSpec{{Name: "web", Token: "token-SECRET-web"}})
	if err != nil {
		t.Fatal(err)
	}
	for _, authz := range []string{"Bearer token-SECRET-wrong", "Bearer token-SECRET-web"} {
		h := a.Middleware(func(*http.Request) string { return "research" }, func(w http.ResponseWriter, _ *http.Request, status int, reason string) {
			log.Info("denied") // what a boundary handler would log: status and reason only
			w.WriteHeader(status)
		})(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
		req := httptest.NewRequest(http.MethodPost, "/agents/research/mcp", nil)
		req.Header.Set("Authorization", authz)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		buf.Write(rec.Body.Bytes())
		for k, vs := range rec.Header() {
			buf.WriteString(k + ": " + strings.Join(vs, ",") + "\n")
		}
	}
	_, err = NewAuthenticator(ModeTokens, []TokenSpec{{Name: "x", Token: "sha256:token-SECRET-web"}, {Name: "y", Token: "token-SECRET-web", Agents: []string{"["}}, {Name: "z", Token: "token-SECRET-web"}})
	errs = append(errs, err)

	guard := AdminGuard("admin-SECRET", nil)(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	rec := httptest.NewRecorder()
	req := httptest.NewRequest(http.MethodGet, "/-/status", nil)
	req.Header.Set("Authorization", "Bearer token-SECRET-wrong")
	guard.ServeHTTP(rec, req)
	buf.Write(rec.Body.Bytes())

	(&Auditor{Logger: log, Metrics: m}).Record(context.Background(), AuditEvent{
		RequestID: "r1", Caller: "web", Agent: "research", Server: "argos", Tool: "search",
		Decision: Decision{Reason: ReasonToolDenied},
	})

	for _, e := range errs {
		if e != nil {
			buf.WriteString(e.Error() + "\n")
		}
	}
	mrec := httptest.NewRecorder()
	m.Handler().ServeHTTP(mrec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	buf.Write(mrec.Body.Bytes())

	text := buf.String()
	if !strings.Contains(text, `"reason":"invalid_characters"`) || !strings.Contains(text, `"reason":"too_long"`) ||
		!strings.Contains(text, `"reason":"blocked"`) || !strings.Contains(text, "policy decision") {
		t.Fatalf("the test did not exercise the logging paths:\n%s", text)
	}
	for _, s := range secrets {
		if strings.Contains(text, s) {
			t.Errorf("secret %q appears in logs, errors, responses or metrics", s)
		}
	}
	if strings.Contains(text, "SECRET") {
		t.Errorf("a secret fragment leaked:\n%s", text)
	}
}

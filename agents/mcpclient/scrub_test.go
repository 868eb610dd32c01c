package mcpclient

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"go.uber.org/zap"
)

// A downstream that echoes the credentials it was sent, in a 401 body or in
// a JSON-RPC error, must not get them into the call's error (which is
// logged and, in a tool loop, sent to the LLM provider) or into a log line.
func TestErrorsDoNotCarryOutboundHeaderValues(t *testing.T) {
	const bearer, userToken = "bearer-SECRET-1234", "user<SECRET>&5678"
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var msg struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params struct{ Name string }
		}
		_ = json.Unmarshal(body, &msg)
		echo := r.Header.Get("Authorization") + " / " + r.Header.Get("X-User-Token")
		switch {
		case r.Method == http.MethodGet: // mcp-go's listener stream; mcp-go logs the failure
			http.Error(w, "no stream for "+echo, http.StatusForbidden)
		case msg.Method == "initialize":
			w.Header().Set("Content-Type", "application/json")
			w.Header().Set("Mcp-Session-Id", "s-1")
			fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":{"protocolVersion":"2025-06-18","capabilities":{"tools":{}},"serverInfo":{"name":"echo","version":"1"}}}`, msg.ID)
		case msg.Method == "tools/call" && msg.Params.Name == "status":
			http.Error(w, "forbidden for "+echo, http.StatusForbidden)
		case msg.Method == "tools/call":
			quoted, _ := json.Marshal("token refused: " + echo) // escapes <, > and &
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"error":{"code":-32001,"message":%s}}`, msg.ID, quoted)
		default:
			w.WriteHeader(http.StatusAccepted)
		}
	}))
	t.Cleanup(ts.Close)
	log, logs := observed(zap.NewAtomicLevelAt(zap.DebugLevel))
	m := newManager(t, Options{Logger: log}, ServerSpec{Name: "echo", URL: ts.URL})
	hdr := http.Header{"Authorization": {"Bearer " + bearer}, "X-User-Token": {userToken}}
	ctx := testCtx(t)

	paths := map[string]func(tool string) error{
		"CallTool": func(tool string) error {
			_, err := m.CallTool(ctx, "echo", tool, nil, hdr, nil, CallOptions{})
			return err
		},
		"CallToolRaw": func(tool string) error {
			_, err := m.CallToolRaw(ctx, "echo", tool, nil, hdr, nil, CallOptions{})
			return err
		},
		"CallToolJSON": func(tool string) error {
			_, err := m.CallToolJSON(ctx, "echo", tool, nil, hdr, nil, CallOptions{})
			return err
		},
	}
	for name, call := range paths {
		for _, tool := range []string{"status", "rpc"} {
			err := call(tool)
			if err == nil {
				t.Fatalf("%s %s: no error", name, tool)
			}
			msg := err.Error()
			for _, secret := range []string{bearer, userToken, "user\\u003cSECRET\\u003e\\u00265678"} {
				if strings.Contains(msg, secret) {
					t.Errorf("%s %s: the error carries %q: %s", name, tool, secret, msg)
				}
			}
			if !strings.Contains(msg, `downstream "echo"`) || !strings.Contains(msg, redactedValue) {
				t.Errorf("%s %s: want the server named and the values redacted: %s", name, tool, msg)
			}
		}
	}
	eventually(t, "mcp-go to log the refused listener stream", func() bool {
		return logs.FilterMessageSnippet("mcp-go: ").Len() > 0
	})
	for _, e := range logs.All() {
		line := fmt.Sprint(e.Message, e.ContextMap())
		if strings.Contains(line, "SECRET") {
			t.Errorf("log line carries a header value: %s", line)
		}
	}
}

func TestScrub(t *testing.T) {
	hdr := http.Header{"Authorization": {"Basic dXNlcjpwdw=="}, "X-Lang": {"en"}, "X-Key": {`a"b\c/d`}}
	base := fmt.Errorf("wrapped: %w", io.ErrUnexpectedEOF)
	for _, tc := range []struct{ in, want string }{
		{"got Basic dXNlcjpwdw== back", "got <redacted> back"},
		{"credential dXNlcjpwdw== alone", "credential <redacted> alone"},
		{`quoted "a\"b\\c/d" in JSON`, `quoted "<redacted>" in JSON`},
		{`raw a"b\c/d too`, `raw <redacted> too`},
		{"en: short values stay", "en: short values stay"},
	} {
		err := scrub(fmt.Errorf("%s: %w", tc.in, base), hdr)
		if got := strings.TrimSuffix(err.Error(), ": wrapped: unexpected EOF"); got != tc.want {
			t.Errorf("scrub(%q) = %q, want %q", tc.in, got, tc.want)
		}
		if !strings.Contains(tc.in, "short") && !strings.Contains(err.Error(), redactedValue) {
			t.Errorf("scrub(%q): nothing redacted", tc.in)
		}
		if !errors.Is(err, io.ErrUnexpectedEOF) {
			t.Errorf("scrub(%q) lost the chain", tc.in)
		}
	}
	if err := scrub(io.EOF, hdr); err != io.EOF {
		t.Errorf("an error without values came back as %v", err)
	}
}

// A server's own secrets (a stdio server's env, what its URL carries) stay
// out of its errors and of the log, stderr lines included.
func TestServerSecretsStayOut(t *testing.T) {
	log, logs := observed(zap.NewAtomicLevelAt(zap.DebugLevel))
	stdio := stdioSpec()
	stdio.Env["PGW_TEST_SECRET"] = "stdio-env-SECRET-123"
	hosted := ServerSpec{Name: "hosted", URL: "http://user-SECRET:pass-SECRET@127.0.0.1:1/mcp?api_key=query-SECRET%2B1"}
	m := newManager(t, Options{Logger: log}, stdio, hosted)
	ctx := testCtx(t)

	var errs []error
	_, err := m.CallTool(ctx, "files", "leak_env", nil, nil, nil, CallOptions{})
	errs = append(errs, err)
	_, err = m.CallTool(ctx, "hosted", "echo", nil, nil, nil, CallOptions{})
	errs = append(errs, err, m.Probe(ctx, "hosted", nil))
	for i, err := range errs {
		if err == nil {
			t.Fatalf("call %d: no error", i)
		}
		// The probe's error names no URL; the calls' errors quote the
		// secret or the URL.
		if msg := err.Error(); strings.Contains(msg, "SECRET") || (i < 2 && !strings.Contains(msg, redactedValue)) {
			t.Errorf("call %d: %s", i, msg)
		}
	}
	eventually(t, "the stderr line in the log", func() bool {
		return hasLog(logs, "downstream stderr", "starting with token "+redactedValue)
	})
	for _, e := range logs.All() {
		if line := fmt.Sprint(e.Message, e.ContextMap()); strings.Contains(line, "SECRET") {
			t.Errorf("log line carries a secret: %s", line)
		}
	}
}

func TestScrubLongestFirstAndOnlySecrets(t *testing.T) {
	hdr := http.Header{"X-Tenant": {"acme"}, "Authorization": {"Bearer acme_s3cr3t_token"}}
	for range 20 { // map order varies
		if got := scrubString("bad token acme_s3cr3t_token for acme", hdr); got != "bad token <redacted> for <redacted>" {
			t.Fatalf("got %q", got)
		}
	}
	spec := ServerSpec{
		URL: "https://acme:acme_live_pw@h.example/mcp?transport=http&debug=true&api_key=k-123456",
		Env: map[string]string{"LOG_LEVEL": "debug", "GITHUB_TOKEN": "ghp_0123456789", "DATABASE_URL": "postgres://app:db-pass-123@db/app"},
	}
	got := scrubString(`Post "https://acme:***@h.example/mcp?transport=http&debug=true&api_key=k-123456": debug output; ghp_0123456789 db-pass-123`,
		serverSecrets(spec))
	want := `Post "https://<redacted>:***@h.example/mcp?transport=http&debug=true&api_key=<redacted>": debug output; <redacted> <redacted>`
	if got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
}

package llm_test

import (
	"context"
	"errors"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/pallasgw/pallasgw/agents/llm"
	"github.com/pallasgw/pallasgw/test/fakellm"
)

func TestRetryAfter429(t *testing.T) {
	const wait = 150 * time.Millisecond
	for _, kind := range providers {
		t.Run(kind, func(t *testing.T) {
			srv := fakellm.New(t)
			srv.Script(fakellm.Status(429, wait), fakellm.Text("after retry"))
			start := time.Now()
			resp, err := newProvider(t, kind, srv).Chat(ctxT(t), userReq("hi"))
			if err != nil || resp.Text != "after retry" {
				t.Fatalf("resp = %+v, err = %v", resp, err)
			}
			if elapsed := time.Since(start); elapsed < wait {
				t.Errorf("retried after %v, before retry-after-ms %v", elapsed, wait)
			}
			if n := len(srv.ChatRequests()); n != 2 {
				t.Errorf("%d requests, want 2", n)
			}
		})
	}
}

func TestRetryAfterSeconds(t *testing.T) {
	srv := fakellm.New(t)
	srv.Script(fakellm.Status(503, time.Second), fakellm.Text("ok"))
	start := time.Now()
	resp, err := newProvider(t, "openai", srv).Chat(ctxT(t), userReq("hi"))
	if err != nil || resp.Text != "ok" {
		t.Fatalf("resp = %+v, err = %v", resp, err)
	}
	if elapsed := time.Since(start); elapsed < time.Second {
		t.Errorf("retried after %v, before Retry-After: 1", elapsed)
	}
}

func TestRetriesExhausted(t *testing.T) {
	for _, kind := range providers {
		t.Run(kind, func(t *testing.T) {
			srv := fakellm.New(t)
			fail := fakellm.Status(500, 5*time.Millisecond).Message("upstream exploded")
			srv.Script(fail, fail, fail, fakellm.Text("never reached"))
			_, err := newProvider(t, kind, srv).Chat(ctxT(t), userReq("hi"))
			var he *llm.HTTPError
			if !errors.As(err, &he) || he.Status != 500 || he.Provider != kind {
				t.Fatalf("err = %#v", err)
			}
			if want := kind + ": HTTP 500: upstream exploded"; err.Error() != want {
				t.Errorf("err = %q, want %q", err, want)
			}
			if n := len(srv.ChatRequests()); n != 3 {
				t.Errorf("%d attempts, want 1 + 2 retries", n)
			}
		})
	}
}

func TestNoRetry(t *testing.T) {
	tests := []struct {
		name       string
		maxRetries int
		step       fakellm.Step
		attempts   int
	}{
		{"400 is final", 0, fakellm.Status(400), 1},
		{"retries disabled", -1, fakellm.Status(429, time.Millisecond), 1},
		{"three retries", 3, fakellm.Status(502, time.Millisecond), 4},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			srv := fakellm.New(t)
			srv.Script(tc.step, tc.step, tc.step, tc.step, tc.step)
			p := newProvider(t, "openai", srv, func(c *llm.ProviderConfig) { c.MaxRetries = tc.maxRetries })
			if _, err := p.Chat(ctxT(t), userReq("hi")); err == nil {
				t.Fatal("no error")
			}
			if n := len(srv.ChatRequests()); n != tc.attempts {
				t.Errorf("%d attempts, want %d", n, tc.attempts)
			}
		})
	}
}

func TestConnectionErrorRetried(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nothing listens: every dial is refused
	var dials atomic.Int32
	client := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
		dials.Add(1)
		return (&net.Dialer{}).DialContext(ctx, network, addr)
	}}}
	p, err := llm.NewOpenAI(llm.ProviderConfig{BaseURL: "http://" + addr + "/v1", APIKey: testKey, MaxRetries: 1, HTTPClient: client})
	if err != nil {
		t.Fatal(err)
	}
	_, err = p.Chat(ctxT(t), userReq("hi"))
	var he *llm.HTTPError
	if !errors.Is(err, syscall.ECONNREFUSED) || errors.As(err, &he) || strings.Contains(err.Error(), testKey) {
		t.Fatalf("err = %v, want the refused connection, not an HTTP error, without the key", err)
	}
	if n := dials.Load(); n != 2 {
		t.Errorf("%d dials, want 1 + 1 retry", n)
	}
}

func TestCancelDuringHang(t *testing.T) {
	for _, kind := range providers {
		t.Run(kind, func(t *testing.T) {
			srv := fakellm.New(t)
			hang := fakellm.Hang()
			srv.Script(hang)
			ctx, cancel := context.WithCancel(ctxT(t))
			errc := make(chan error, 1)
			go func() {
				_, err := newProvider(t, kind, srv).Chat(ctx, userReq("hi"))
				errc <- err
			}()
			<-hang.Started()
			cancel()
			select {
			case err := <-errc:
				if !errors.Is(err, context.Canceled) {
					t.Errorf("err = %v, want context.Canceled", err)
				}
			case <-time.After(5 * time.Second):
				t.Fatal("Chat did not return after cancel")
			}
			select {
			case <-hang.Disconnected():
			case <-time.After(5 * time.Second):
				t.Fatal("fake did not see the disconnect")
			}
		})
	}
}

func TestTimeoutBoundsCall(t *testing.T) {
	srv := fakellm.New(t)
	hang := fakellm.Hang()
	srv.Script(hang)
	p := newProvider(t, "anthropic", srv, func(c *llm.ProviderConfig) { c.Timeout = 200 * time.Millisecond })
	_, err := p.Chat(ctxT(t), userReq("hi"))
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v, want deadline exceeded", err)
	}
	<-hang.Disconnected()
}

func TestCancelDuringBackoff(t *testing.T) {
	srv := fakellm.New(t)
	srv.Script(fakellm.Status(429, 20*time.Second))
	ctx, cancel := context.WithTimeout(ctxT(t), 300*time.Millisecond)
	defer cancel()
	_, err := newProvider(t, "openai", srv).Chat(ctx, userReq("hi"))
	if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "HTTP 429") {
		t.Fatalf("err = %v", err)
	}
}

func TestPreflight(t *testing.T) {
	for _, kind := range providers {
		t.Run(kind, func(t *testing.T) {
			srv := fakellm.New(t)
			srv.SetModels([]string{"fake-model", "other"})
			p := newProvider(t, kind, srv)
			if err := p.Preflight(ctxT(t), "other"); err != nil {
				t.Errorf("listed model: %v", err)
			}
			err := p.Preflight(ctxT(t), "missing-model")
			if err == nil || !strings.Contains(err.Error(), `model "missing-model" not listed`) {
				t.Errorf("missing model: err = %v", err)
			}
			for _, r := range srv.Requests() {
				if r.Method != http.MethodGet {
					t.Errorf("preflight sent %s %s", r.Method, r.Path)
				}
			}
		})
	}
}

func TestBadKeyNeverLeaks(t *testing.T) {
	for _, kind := range providers {
		t.Run(kind, func(t *testing.T) {
			srv := fakellm.New(t)
			srv.RequireKey("the-right-key")
			p := newProvider(t, kind, srv) // uses testKey, which the fake echoes back
			_, chatErr := p.Chat(ctxT(t), userReq("hi"))
			preErr := p.Preflight(ctxT(t), "fake-model")
			for name, err := range map[string]error{"chat": chatErr, "preflight": preErr} {
				if err == nil {
					t.Fatalf("%s: no error", name)
				}
				msg := err.Error()
				if strings.Contains(msg, testKey) || !strings.Contains(msg, kind+": HTTP 401") {
					t.Errorf("%s: err = %q", name, msg)
				}
			}
			if n := len(srv.ChatRequests()); n != 1 {
				t.Errorf("401 retried: %d attempts", n)
			}
		})
	}
}

// An error event in a 2xx stream is the provider's own text and may quote
// the key or the caller's forwarded credential back.
func TestStreamErrorsNeverLeak(t *testing.T) {
	const forwarded = "Bearer caller-forwarded-secret"
	for _, kind := range providers {
		t.Run(kind, func(t *testing.T) {
			srv := fakellm.New(t)
			p := newProvider(t, kind, srv)
			srv.Script(fakellm.StreamError("bad credentials " + testKey + " / " + forwarded))
			req := userReq("hi")
			req.Header = http.Header{"Authorization": {forwarded}}
			_, err := p.Chat(ctxT(t), req)
			if err == nil {
				t.Fatal("no error")
			}
			msg := err.Error()
			if strings.Contains(msg, testKey) || strings.Contains(msg, "caller-forwarded-secret") || !strings.Contains(msg, "bad credentials <redacted>") {
				t.Errorf("err = %q", msg)
			}
		})
	}
}

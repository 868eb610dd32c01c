//go:build linux

package mcpclient

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// h1Server is a test server that counts the connections it accepted and
// the ones it closed.
type h1Server struct {
	*httptest.Server
	accepted atomic.Int32
	closed   atomic.Int32
}

func newH1Server(t *testing.T, h http.HandlerFunc, configure ...func(*http.Server)) *h1Server {
	t.Helper()
	s := &h1Server{Server: httptest.NewUnstartedServer(h)}
	s.Config.ConnState = func(_ net.Conn, state http.ConnState) {
		switch state {
		case http.StateNew:
			s.accepted.Add(1)
		case http.StateClosed, http.StateHijacked:
			s.closed.Add(1)
		}
	}
	for _, f := range configure {
		f(s.Config)
	}
	s.Start()
	t.Cleanup(s.Close)
	return s
}

// newTestH1 returns an h1Transport over newHTTPTransport, closed with t.
func newTestH1(t *testing.T) *h1Transport {
	tr := newH1Transport(newHTTPTransport())
	t.Cleanup(tr.CloseIdleConnections)
	return tr
}

func newTestRequest(t *testing.T, ctx context.Context, method, url string, body io.Reader) *http.Request {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, method, url, body)
	if err != nil {
		t.Fatal(err)
	}
	return req
}

// roundTrip sends req and returns the response with its body read to the
// end.
func roundTrip(t *testing.T, rt http.RoundTripper, req *http.Request) (*http.Response, string) {
	t.Helper()
	resp, err := rt.RoundTrip(req)
	if err != nil {
		t.Fatalf("%s %s: %v", req.Method, req.URL, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s %s: reading the body: %v", req.Method, req.URL, err)
	}
	return resp, string(b)
}

// echo answers with the request body, with a Content-Length or chunked.
func echo(chunked bool) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		if !chunked {
			w.Header().Set("Content-Length", strconv.Itoa(len(b)))
			w.Write(b)
			return
		}
		w.Write(b[:len(b)/2])
		w.(http.Flusher).Flush()
		w.Write(b[len(b)/2:])
	}
}

func TestH1Bodies(t *testing.T) {
	payload := strings.Repeat(`{"jsonrpc":"2.0"}`, 300)
	for _, tc := range []struct {
		name        string
		chunkedResp bool
		body        func() io.Reader
	}{
		{"content-length both ways", false, func() io.Reader { return strings.NewReader(payload) }},
		{"chunked response", true, func() io.Reader { return strings.NewReader(payload) }},
		// A request body of unknown length goes to the fallback (see
		// TestH1Fallback), whose connections are its own.
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := newH1Server(t, echo(tc.chunkedResp))
			tr := newTestH1(t)
			for i := range 5 {
				resp, got := roundTrip(t, tr, newTestRequest(t, testCtx(t), http.MethodPost, srv.URL, tc.body()))
				if got != payload {
					t.Fatalf("request %d: body of %d bytes, want the %d sent", i, len(got), len(payload))
				}
				if chunked := len(resp.TransferEncoding) > 0; chunked != tc.chunkedResp {
					t.Errorf("request %d: transfer encoding %q, content length %d", i, resp.TransferEncoding, resp.ContentLength)
				}
			}
			if n := srv.accepted.Load(); n != 1 {
				t.Errorf("server accepted %d connections, want 1 reused", n)
			}
			if n := tr.idleCount(); n != 1 {
				t.Errorf("%d idle connections, want 1", n)
			}
		})
	}
}

func TestH1StreamsSSE(t *testing.T) {
	next := make(chan struct{})
	srv := newH1Server(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, "data: one\n\n")
		w.(http.Flusher).Flush()
		select {
		case <-next:
		case <-r.Context().Done():
			return
		}
		io.WriteString(w, "data: two\n\n")
	})
	tr := newTestH1(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := tr.RoundTrip(newTestRequest(t, ctx, http.MethodPost, srv.URL, strings.NewReader("{}")))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	br := bufio.NewReader(resp.Body)
	event := func() string {
		t.Helper()
		line, err := br.ReadString('\n')
		if err != nil {
			t.Fatalf("reading an event: %v", err)
		}
		if blank, err := br.ReadString('\n'); err != nil || blank != "\n" {
			t.Fatalf("event not ended: %q, %v", blank, err)
		}
		return line
	}
	if got := event(); got != "data: one\n" {
		t.Fatalf("first event %q", got)
	}
	close(next) // only now may the server send the second
	if got := event(); got != "data: two\n" {
		t.Fatalf("second event %q", got)
	}
	if _, err := br.ReadByte(); err != io.EOF {
		t.Fatalf("after the last event: %v, want EOF", err)
	}
	if n := tr.idleCount(); n != 1 {
		t.Errorf("%d idle connections after the stream's end, want 1", n)
	}
}

func TestH1Cancel(t *testing.T) {
	for _, tc := range []struct {
		name string
		// run sends a request the server is stuck on and cancels it once
		// the server has it; it returns the error the caller sees.
		run func(t *testing.T, tr *h1Transport, url string, got <-chan struct{}) error
	}{
		{"before sending", func(t *testing.T, tr *h1Transport, url string, _ <-chan struct{}) error {
			ctx, cancel := context.WithCancel(context.Background())
			cancel()
			_, err := tr.RoundTrip(newTestRequest(t, ctx, http.MethodPost, url, strings.NewReader("{}")))
			return err
		}},
		{"waiting for the head", func(t *testing.T, tr *h1Transport, url string, got <-chan struct{}) error {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			go func() { <-got; cancel() }()
			resp, err := tr.RoundTrip(newTestRequest(t, ctx, http.MethodPost, url+"?stuck=head", strings.NewReader("{}")))
			if err == nil {
				resp.Body.Close()
			}
			return err
		}},
		{"reading the body", func(t *testing.T, tr *h1Transport, url string, got <-chan struct{}) error {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			resp, err := tr.RoundTrip(newTestRequest(t, ctx, http.MethodPost, url+"?stuck=body", strings.NewReader("{}")))
			if err != nil {
				return err
			}
			defer resp.Body.Close()
			if _, err := io.ReadFull(resp.Body, make([]byte, 5)); err != nil {
				return err
			}
			<-got
			cancel()
			_, err = io.ReadAll(resp.Body)
			return err
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, stuck := make(chan struct{}, 1), make(chan struct{})
			srv := newH1Server(t, func(w http.ResponseWriter, r *http.Request) {
				io.Copy(io.Discard, r.Body)
				switch r.URL.Query().Get("stuck") {
				case "":
					io.WriteString(w, "fine")
					return
				case "body":
					io.WriteString(w, "start")
					w.(http.Flusher).Flush()
				}
				got <- struct{}{}
				select {
				case <-r.Context().Done(): // the client closed the connection
				case <-stuck: // the test is over
				}
			})
			t.Cleanup(func() { close(stuck) })
			tr := newTestH1(t)
			start := time.Now()
			errc := make(chan error, 1)
			go func() { errc <- tc.run(t, tr, srv.URL, got) }()
			err := receive(t, "the canceled request to return", errc)
			if !errors.Is(err, context.Canceled) {
				t.Fatalf("error %v, want context.Canceled", err)
			}
			if d := time.Since(start); d > 5*time.Second {
				t.Errorf("returned after %s", d)
			}
			if n := tr.idleCount(); n != 0 {
				t.Errorf("%d idle connections after the cancel, want 0", n)
			}
			before := srv.accepted.Load()
			if _, body := roundTrip(t, tr, newTestRequest(t, testCtx(t), http.MethodGet, srv.URL, nil)); body != "fine" {
				t.Fatalf("next request: %q", body)
			}
			if n := srv.accepted.Load(); n != before+1 {
				t.Errorf("next request: %d new connections, want 1", n-before)
			}
		})
	}
}

// TestH1ServerClosedIdle: a keep-alive connection the server closed while
// it sat in the pool is not used for the next request.
func TestH1ServerClosedIdle(t *testing.T) {
	srv := newH1Server(t, echo(false), func(s *http.Server) { s.IdleTimeout = 20 * time.Millisecond })
	tr := newTestH1(t)
	post := func() {
		t.Helper()
		if _, body := roundTrip(t, tr, newTestRequest(t, testCtx(t), http.MethodPost, srv.URL, strings.NewReader("{}"))); body != "{}" {
			t.Fatalf("body %q", body)
		}
	}
	post()
	eventually(t, "the server to close the idle connection", func() bool { return srv.closed.Load() == 1 })
	eventually(t, "the close to reach the client", func() bool {
		tr.mu.Lock()
		defer tr.mu.Unlock()
		for _, conns := range tr.idle {
			for _, pc := range conns {
				if pc.alive() {
					return false
				}
			}
		}
		return true
	})
	post()
	if n := srv.accepted.Load(); n != 2 {
		t.Errorf("server accepted %d connections, want 2", n)
	}
}

func TestH1NotReused(t *testing.T) {
	long := strings.Repeat("x", 64<<10)
	for _, tc := range []struct {
		name string
		send func(t *testing.T, tr *h1Transport, url string)
	}{
		{"body closed before its end", func(t *testing.T, tr *h1Transport, url string) {
			resp, err := tr.RoundTrip(newTestRequest(t, testCtx(t), http.MethodGet, url+"?long=1", nil))
			if err != nil {
				t.Fatal(err)
			}
			if _, err := io.ReadFull(resp.Body, make([]byte, 10)); err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
		}},
		{"response asks to close", func(t *testing.T, tr *h1Transport, url string) {
			resp, body := roundTrip(t, tr, newTestRequest(t, testCtx(t), http.MethodGet, url+"?close=1", nil))
			if !resp.Close || body != "short" {
				t.Fatalf("close %v, body %q", resp.Close, body)
			}
		}},
		{"request asks to close", func(t *testing.T, tr *h1Transport, url string) {
			req := newTestRequest(t, testCtx(t), http.MethodGet, url, nil)
			req.Close = true
			roundTrip(t, tr, req)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := newH1Server(t, func(w http.ResponseWriter, r *http.Request) {
				if r.URL.Query().Has("close") {
					w.Header().Set("Connection", "close")
				}
				if r.URL.Query().Has("long") {
					io.WriteString(w, long)
					return
				}
				io.WriteString(w, "short")
			})
			tr := newTestH1(t)
			tc.send(t, tr, srv.URL)
			if n := tr.idleCount(); n != 0 {
				t.Errorf("%d idle connections, want 0", n)
			}
			if _, body := roundTrip(t, tr, newTestRequest(t, testCtx(t), http.MethodGet, srv.URL, nil)); body != "short" {
				t.Fatalf("next request: %q", body)
			}
			if n := srv.accepted.Load(); n != 2 {
				t.Errorf("server accepted %d connections, want 2", n)
			}
		})
	}
}

func TestH1SkipsInformational(t *testing.T) {
	srv := newH1Server(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Link", "</style.css>; rel=preload")
		w.WriteHeader(http.StatusEarlyHints)
		w.WriteHeader(http.StatusProcessing)
		io.WriteString(w, "final")
	})
	tr := newTestH1(t)
	for range 2 {
		resp, body := roundTrip(t, tr, newTestRequest(t, testCtx(t), http.MethodGet, srv.URL, nil))
		if resp.StatusCode != http.StatusOK || body != "final" {
			t.Fatalf("status %d, body %q; want 200 final", resp.StatusCode, body)
		}
	}
	if n := srv.accepted.Load(); n != 1 {
		t.Errorf("server accepted %d connections, want 1 reused", n)
	}
}

func TestH1HeadLimit(t *testing.T) {
	srv := newH1Server(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Big", strings.Repeat("b", 4<<10))
	})
	tr := newTestH1(t)
	tr.maxHeaderBytes = 1 << 10
	_, err := tr.RoundTrip(newTestRequest(t, testCtx(t), http.MethodGet, srv.URL, nil))
	if !errors.Is(err, errH1HeadTooLarge) {
		t.Fatalf("error %v, want %v", err, errH1HeadTooLarge)
	}
}

// recorder is a fallback transport that records what it was given.
type recorder struct {
	mu   sync.Mutex
	urls []string
}

func (r *recorder) RoundTrip(req *http.Request) (*http.Response, error) {
	r.mu.Lock()
	r.urls = append(r.urls, req.URL.String())
	r.mu.Unlock()
	return &http.Response{StatusCode: http.StatusTeapot, Body: http.NoBody, Request: req}, nil
}

func TestH1Fallback(t *testing.T) {
	srv := newH1Server(t, func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "direct") })
	proxied := func(*http.Request) (*url.URL, error) { return url.Parse("http://proxy.invalid:3128") }
	for _, tc := range []struct {
		name     string
		url      string
		proxy    func(*http.Request) (*url.URL, error)
		header   http.Header
		body     io.Reader // "{}" when nil
		fallback bool
	}{
		{name: "plain http", url: srv.URL, fallback: false},
		{name: "https", url: "https://example.invalid/mcp", fallback: true},
		{name: "proxied", url: srv.URL, proxy: proxied, fallback: true},
		{name: "upgrade", url: srv.URL, header: http.Header{"Upgrade": {"websocket"}, "Connection": {"Upgrade"}}, fallback: true},
		{name: "expect continue", url: srv.URL, header: http.Header{"Expect": {"100-continue"}}, fallback: true},
		{name: "invalid header value", url: srv.URL, header: http.Header{"X-Bad": {"a\r\nInjected: 1"}}, fallback: true},
		{name: "body at the limit", url: srv.URL, body: strings.NewReader(strings.Repeat("x", h1MaxBody)), fallback: false},
		// A server may answer a long body early and close; only net/http
		// reads that answer while it writes.
		{name: "body over the limit", url: srv.URL, body: strings.NewReader(strings.Repeat("x", h1MaxBody+1)), fallback: true},
		{name: "body of unknown length", url: srv.URL, body: io.MultiReader(strings.NewReader("{}")), fallback: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tr := newTestH1(t)
			rec := &recorder{}
			tr.fallback, tr.proxy = rec, tc.proxy
			reqBody := tc.body
			if reqBody == nil {
				reqBody = strings.NewReader("{}")
			}
			req := newTestRequest(t, testCtx(t), http.MethodPost, tc.url, reqBody)
			for name, vals := range tc.header {
				req.Header[name] = vals
			}
			before := srv.accepted.Load()
			resp, body := roundTrip(t, tr, req)
			if tc.fallback {
				if resp.StatusCode != http.StatusTeapot || len(rec.urls) != 1 || rec.urls[0] != tc.url {
					t.Errorf("status %d, fallback saw %q; want the request at the fallback", resp.StatusCode, rec.urls)
				}
				if n := srv.accepted.Load(); n != before {
					t.Errorf("the server was dialed")
				}
				return
			}
			if len(rec.urls) != 0 || body != "direct" {
				t.Errorf("fallback saw %q, body %q; want the request sent directly", rec.urls, body)
			}
		})
	}
}

func TestH1Concurrent(t *testing.T) {
	base := runtime.NumGoroutine()
	srv := newH1Server(t, echo(false))
	tr := newH1Transport(newHTTPTransport())
	tr.maxIdle, tr.maxIdlePerHost = 8, 8
	client := &http.Client{Transport: tr}
	const workers, requests = 32, 50
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := range workers {
		wg.Go(func() {
			for i := range requests {
				want := strconv.Itoa(w*requests + i)
				req, err := http.NewRequest(http.MethodPost, srv.URL, strings.NewReader(want))
				if err != nil {
					errs <- err
					return
				}
				resp, err := client.Do(req)
				if err != nil {
					errs <- err
					return
				}
				b, err := io.ReadAll(resp.Body)
				resp.Body.Close()
				if err != nil || string(b) != want {
					errs <- errors.New("body " + string(b) + ", want " + want)
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if n := tr.idleCount(); n > 8 {
		t.Errorf("%d idle connections, want at most 8", n)
	}
	tr.CloseIdleConnections()
	if n := tr.idleCount(); n != 0 || len(tr.idle) != 0 {
		t.Errorf("after CloseIdleConnections: %d idle connections in %d hosts", n, len(tr.idle))
	}
	srv.Close()
	noLeak(t, base)
}

func TestH1CloseIdleConnections(t *testing.T) {
	srv := newH1Server(t, func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "body") })
	tr := newTestH1(t)
	roundTrip(t, tr, newTestRequest(t, testCtx(t), http.MethodGet, srv.URL, nil))
	busy, err := tr.RoundTrip(newTestRequest(t, testCtx(t), http.MethodGet, srv.URL, nil))
	if err != nil {
		t.Fatal(err)
	}
	if n := tr.idleCount(); n != 0 {
		t.Fatalf("%d idle connections while the only one is busy", n)
	}
	roundTrip(t, tr, newTestRequest(t, testCtx(t), http.MethodGet, srv.URL, nil)) // dials a second one
	if n := tr.idleCount(); n != 1 {
		t.Fatalf("%d idle connections, want 1", n)
	}
	tr.CloseIdleConnections()
	if n := tr.idleCount(); n != 0 {
		t.Errorf("%d idle connections after CloseIdleConnections", n)
	}
	eventually(t, "the server to see the idle connection closed", func() bool { return srv.closed.Load() == 1 })
	// The busy connection predates CloseIdleConnections: it is closed at
	// the end of its response, not pooled.
	if b, err := io.ReadAll(busy.Body); err != nil || string(b) != "body" {
		t.Fatalf("busy body %q, %v", b, err)
	}
	busy.Body.Close()
	if n := tr.idleCount(); n != 0 {
		t.Errorf("%d idle connections after the busy one ended", n)
	}
	eventually(t, "the server to see both connections closed", func() bool { return srv.closed.Load() == 2 })
}

// TestH1BodyMisuse: reads after Close, double Close, and reads racing a
// Close neither panic nor pool a connection twice.
func TestH1BodyMisuse(t *testing.T) {
	srv := newH1Server(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Has("long") {
			io.WriteString(w, strings.Repeat("x", 256<<10))
			return
		}
		io.WriteString(w, "body")
	})
	tr := newTestH1(t)

	resp, err := tr.RoundTrip(newTestRequest(t, testCtx(t), http.MethodGet, srv.URL, nil))
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := io.ReadAll(resp.Body); string(b) != "body" {
		t.Fatalf("body %q", b)
	}
	for range 2 {
		if n, err := resp.Body.Read(make([]byte, 1)); n != 0 || err != io.EOF {
			t.Errorf("read after EOF: %d, %v", n, err)
		}
	}
	resp.Body.Close()
	resp.Body.Close()
	if n, err := resp.Body.Read(make([]byte, 1)); n != 0 || !errors.Is(err, http.ErrBodyReadAfterClose) {
		t.Errorf("read after Close: %d, %v", n, err)
	}
	if n := tr.idleCount(); n != 1 {
		t.Errorf("%d idle connections, want 1", n)
	}

	for range 20 {
		resp, err := tr.RoundTrip(newTestRequest(t, testCtx(t), http.MethodGet, srv.URL+"?long=1", nil))
		if err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		for range 4 {
			wg.Go(func() { io.Copy(io.Discard, resp.Body) })
		}
		wg.Go(func() { resp.Body.Close() })
		wg.Wait()
		if n := tr.idleCount(); n > 1 {
			t.Fatalf("%d idle connections, want at most 1", n)
		}
	}
}

// BenchmarkH1Transport compares a raw call's round trip (a ~200-byte JSON
// POST answered by ~150 bytes of JSON) over net/http's transport and over
// h1Transport; h1 reports its time as a ratio to std's in the same run
// (x-std). The figures include the local server's share.
func BenchmarkH1Transport(b *testing.B) {
	answer := []byte(`{"jsonrpc":"2.0","id":"pgw-call-1","result":{"content":[{"type":"text","text":"the weather in Paris is sunny, 21 degrees"}],"isError":false}}` + "\n")
	body := []byte(`{"jsonrpc":"2.0","id":"pgw-call-1","method":"tools/call","params":{"name":"weather","arguments":{"city":"Paris","units":"metric","days":1},"_meta":{"progressToken":"pgw-progress-0000000001"}},"pad":"xxxxxxxxxx"}`)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		w.Write(answer)
	}))
	defer srv.Close()
	var stdPerOp float64 // ns/op of std in this run; 0 if it did not run
	for _, bc := range []struct {
		name string
		rt   func() http.RoundTripper
	}{
		{"std", func() http.RoundTripper { return newHTTPTransport() }},
		{"h1", func() http.RoundTripper { return newH1Transport(newHTTPTransport()) }},
	} {
		b.Run(bc.name, func(b *testing.B) {
			client := &http.Client{Transport: bc.rt(), CheckRedirect: noRedirects}
			defer client.CloseIdleConnections()
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			b.ReportAllocs()
			cpu := processCPU()
			for b.Loop() {
				req, err := http.NewRequestWithContext(ctx, http.MethodPost, srv.URL, bytes.NewReader(body))
				if err != nil {
					b.Fatal(err)
				}
				req.Header["Content-Type"] = []string{"application/json"}
				req.Header["Accept"] = []string{"application/json, text/event-stream"}
				resp, err := client.Do(req)
				if err != nil {
					b.Fatal(err)
				}
				if _, err := io.Copy(io.Discard, resp.Body); err != nil {
					b.Fatal(err)
				}
				resp.Body.Close()
			}
			b.ReportMetric(float64(processCPU()-cpu)/float64(b.N), "cpu-ns/op")
			perOp := float64(b.Elapsed().Nanoseconds()) / float64(b.N)
			if bc.name == "std" {
				stdPerOp = perOp
			} else if stdPerOp > 0 {
				b.ReportMetric(perOp/stdPerOp, "x-std")
			}
		})
	}
}

// processCPU returns the CPU time the process has used, user and system,
// in nanoseconds: steadier than wall time on a busy machine.
func processCPU() int64 {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}

// A write that fails while the body is copied is reported as the
// connection's error, which isLost recognises, not as net/http's wrapping
// of it.
func TestH1WriteErrorIsTheConnections(t *testing.T) {
	tr := newTestH1(t)
	local, remote := net.Pipe()
	remote.Close()
	pc := newH1Conn(tr, "pipe:80", 0, local)
	req := newTestRequest(t, testCtx(t), http.MethodPost, "http://pipe/mcp", strings.NewReader(strings.Repeat("x", 10<<10)))
	_, err := pc.exchange(req)
	if !errors.Is(err, io.ErrClosedPipe) {
		t.Fatalf("err = %v (%T), want the pipe's io.ErrClosedPipe", err, err)
	}
}

// Idle connections are closed once they expire, with no request to notice.
func TestH1ReapsExpiredIdleConnections(t *testing.T) {
	srv := newH1Server(t, func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") })
	tr := newTestH1(t)
	tr.idleTimeout = 50 * time.Millisecond
	roundTrip(t, tr, newTestRequest(t, testCtx(t), http.MethodGet, srv.URL, nil))
	if n := tr.idleCount(); n != 1 {
		t.Fatalf("%d idle connections, want 1", n)
	}
	eventually(t, "the expired connection to be closed", func() bool { return srv.closed.Load() == 1 && tr.idleCount() == 0 })
	tr.mu.Lock()
	reaper, hosts := tr.reaper, len(tr.idle)
	tr.mu.Unlock()
	if reaper != nil || hosts != 0 {
		t.Errorf("after reaping: timer %v, %d hosts; want none", reaper, hosts)
	}
	// Pooling again arms the timer again.
	roundTrip(t, tr, newTestRequest(t, testCtx(t), http.MethodGet, srv.URL, nil))
	eventually(t, "the second connection to be closed", func() bool { return srv.closed.Load() == 2 && tr.idleCount() == 0 })
}

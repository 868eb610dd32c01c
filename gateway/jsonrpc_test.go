package gateway

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"testing/iotest"
	"time"
)

func TestCheckMessage(t *testing.T) {
	for _, c := range []struct {
		name, body string
		code       int // 0: accepted
		id         any
		msg        string
	}{
		{name: "request", body: `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`},
		{name: "string id", body: `{"jsonrpc":"2.0","id":"a","method":"tools/list"}`},
		{name: "notification", body: `{"jsonrpc":"2.0","method":"notifications/initialized"}`},
		{name: "response", body: `{"jsonrpc":"2.0","id":3,"result":{}}`},
		{name: "error response", body: `{"jsonrpc":"2.0","id":3,"error":{"code":-1,"message":"no"}}`},
		{name: "null result", body: ` {"jsonrpc":"2.0","id":3,"result":null}`},
		// mcp-go would answer params of the wrong type with its Go
		// decoder's message.
		{name: "params not an object", body: `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":5}`, code: rpcInvalidParams, id: 1.0, msg: "invalid params: params must be an object"},
		{name: "params a string", body: `{"jsonrpc":"2.0","id":"s","method":"tools/call","params":"x"}`, code: rpcInvalidParams, id: "s", msg: "invalid params: params must be an object"},
		{name: "params an array", body: `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":[1]}`, code: rpcInvalidParams, id: 1.0, msg: "invalid params: params must be an object"},
		{name: "tool name not a string", body: `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":5}}`, code: rpcInvalidParams, id: 1.0, msg: "invalid params: name must be a string"},
		{name: "prompt name not a string", body: `{"jsonrpc":"2.0","id":1,"method":"prompts/get","params":{"name":{}}}`, code: rpcInvalidParams, id: 1.0, msg: "invalid params: name must be a string"},
		{name: "tool name null", body: `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":null}}`},
		{name: "params null", body: `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":null}`},
		{name: "params an object", body: `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{}}`},
		{name: "params not an object, no method", body: `{"jsonrpc":"2.0","id":1,"params":"x"}`, code: rpcInvalidRequest, id: 1.0, msg: "has no method"},
		{name: "invalid JSON", body: `{"jsonrpc":"2.0",`, code: rpcParseError, msg: "parse error: the request body is not valid json"},
		{name: "empty", body: ``, code: rpcParseError, msg: "parse error"},
		{name: "batch", body: `[{"jsonrpc":"2.0","id":1,"method":"ping"}]`, code: rpcInvalidRequest, msg: "must be a JSON object (batches are not supported)"},
		{name: "string", body: `"x"`, code: rpcInvalidRequest, msg: "must be a JSON object"},
		{name: "number", body: `5`, code: rpcInvalidRequest, msg: "must be a JSON object"},
		{name: "null", body: `null`, code: rpcInvalidRequest, msg: "must be a JSON object"},
		{name: "no method", body: `{"jsonrpc":"2.0","id":1}`, code: rpcInvalidRequest, id: 1.0, msg: "has no method"},
		{name: "method not a string", body: `{"jsonrpc":"2.0","id":"x","method":5}`, code: rpcInvalidRequest, id: "x", msg: "method must be a string"},
		{name: "wrong version", body: `{"jsonrpc":"1.0","id":7,"method":"ping"}`, code: rpcInvalidRequest, id: 7.0, msg: `jsonrpc must be "2.0"`},
		{name: "no version", body: `{"id":7,"method":"ping"}`, code: rpcInvalidRequest, id: 7.0, msg: `jsonrpc must be "2.0"`},
		{name: "object id", body: `{"jsonrpc":"2.0","id":{"a":1},"method":"ping"}`, code: rpcInvalidRequest, msg: "id must be a string or a number"},
		{name: "null id", body: `{"jsonrpc":"2.0","id":null,"method":"tools/list"}`, code: rpcInvalidRequest, msg: "id must not be null"},
		{name: "null id error response", body: `{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"?"}}`},
		{name: "bool id", body: `{"jsonrpc":"2.0","id":true,"method":"ping"}`, code: rpcInvalidRequest, msg: "id must be a string or a number"},
	} {
		t.Run(c.name, func(t *testing.T) {
			msg, e := checkMessage([]byte(c.body))
			if (msg == nil) == (e == nil) {
				t.Fatalf("checkMessage = %v, %v: want a message or an error", msg, e)
			}
			switch {
			case c.code == 0 && e != nil:
				t.Fatalf("rejected: %+v", e)
			case c.code == 0:
				return
			case e == nil:
				t.Fatal("accepted")
			}
			if e.code != c.code || e.id != c.id || !strings.Contains(e.msg, c.msg) {
				t.Fatalf("got %+v, want code %d, id %v, message with %q", e, c.code, c.id, c.msg)
			}
		})
	}
}

func TestQuoteClipped(t *testing.T) {
	if got := quoteClipped("research"); got != `"research"` {
		t.Errorf("short: %s", got)
	}
	long := strings.Repeat("a", 100000)
	if got := quoteClipped(long); len(got) > maxEcho+40 || !strings.HasSuffix(got, "… (100000 bytes)") {
		t.Errorf("long: %s", got)
	}
	if got := quoteClipped(strings.Repeat("é", 40)); !strings.HasPrefix(got, `"`+strings.Repeat("é", 32)+`"`) {
		t.Errorf("multi-byte: %s", got)
	}
}

func TestReadAllWithinEndsATricklingBody(t *testing.T) {
	old := bodyReadTimeout
	bodyReadTimeout = 100 * time.Millisecond
	t.Cleanup(func() { bodyReadTimeout = old })
	errc := make(chan error, 1)
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, err := readAllWithin(w, r, 1<<20)
		errc <- err
		w.WriteHeader(http.StatusBadRequest)
	}))
	defer ts.Close()
	conn, err := net.Dial("tcp", ts.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	// Ten bytes promised, three sent, then silence.
	io.WriteString(conn, "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\n\r\nabc")
	select {
	case err := <-errc:
		if err == nil || !strings.Contains(err.Error(), "the body did not arrive within 100ms") {
			t.Fatalf("err = %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the read never ended")
	}
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil || resp.StatusCode != http.StatusBadRequest {
		t.Fatalf("answer: %v %v", resp, err)
	}
}

func TestReadAllWithinOverLimitClosesTheConnection(t *testing.T) {
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := readAllWithin(w, r, 5)
		if err != nil || len(body) != 5 {
			t.Errorf("read %q, %v", body, err)
		}
		w.WriteHeader(http.StatusRequestEntityTooLarge)
	}))
	defer ts.Close()
	conn, err := net.Dial("tcp", ts.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(10 * time.Second))
	// Twenty bytes promised, ten sent, then silence: the answer must not
	// wait for the rest.
	io.WriteString(conn, "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 20\r\n\r\n0123456789")
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil || resp.StatusCode != http.StatusRequestEntityTooLarge || !resp.Close {
		t.Fatalf("answer: %v %v", resp, err)
	}
}

func TestServesRunningCall(t *testing.T) {
	for body, want := range map[string]bool{
		`{"jsonrpc":"2.0","id":"pgw-r-1","result":{}}`:                                  true,
		`{"jsonrpc":"2.0","id":3,"error":{"code":-1,"message":"no"}}`:                   true,
		`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}`: true,
		`{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"x"}}`:          false,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`:                        false,
		`not json`: false,
	} {
		msg, _ := checkMessage([]byte(body))
		if got := servesRunningCall(msg); got != want {
			t.Errorf("%s: %v, want %v", body, got, want)
		}
	}
}

func TestReadAllSizesItsBuffer(t *testing.T) {
	body := strings.Repeat("x", 3000)
	for _, c := range []struct {
		name           string
		declared, n    int64
		want           string
		wantCapAtLeast int
		wantCapAtMost  int
	}{
		{"as declared", 3000, 1 << 20, body, 3001, 3001},
		{"undeclared", -1, 1 << 20, body, 3000, 1 << 20},
		{"declared short", 10, 1 << 20, body, 3000, 1 << 20},
		{"declared long", 1 << 30, 1 << 30, body, 64<<10 + 1, 64<<10 + 1},
		{"over the limit", 3000, 100, body[:100], 100, 1 << 20},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := readAll(io.LimitReader(iotest.OneByteReader(strings.NewReader(body)), c.n), c.declared, c.n)
			if err != nil || string(got) != c.want {
				t.Fatalf("got %d bytes, %v; want %d", len(got), err, len(c.want))
			}
			if cap(got) < c.wantCapAtLeast || cap(got) > c.wantCapAtMost {
				t.Errorf("cap %d, want %d…%d", cap(got), c.wantCapAtLeast, c.wantCapAtMost)
			}
		})
	}
	if _, err := readAll(iotest.ErrReader(io.ErrUnexpectedEOF), 5, 10); err != io.ErrUnexpectedEOF {
		t.Errorf("a read error: %v", err)
	}
}

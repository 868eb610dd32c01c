//go:build e2e

package e2e

// A small Chrome DevTools Protocol client over --remote-debugging-pipe
// (Chromium reads commands on fd 3 and writes answers and events on fd 4,
// each a JSON message ended by a NUL byte): no WebSocket, no npm package,
// no download. Chromium itself is Debian's (`chromium`, installed by
// .ci/install-e2e-tools).

import (
	"bufio"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"sync"
	"testing"
	"time"
)

type cdpMsg struct {
	ID        int             `json:"id,omitempty"`
	Method    string          `json:"method,omitempty"`
	Params    json.RawMessage `json:"params,omitempty"`
	SessionID string          `json:"sessionId,omitempty"`
	Result    json.RawMessage `json:"result,omitempty"`
	Error     *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error,omitempty"`
}

// browser is one headless Chromium with one page, for one test.
type browser struct {
	t       testing.TB
	proc    *proc
	in      *os.File // our end of Chromium's fd 3
	mu      sync.Mutex
	nextID  int
	pending map[int]chan cdpMsg
	session string // the page's

	problemsMu sync.Mutex
	problems   []string // exceptions, console errors, CSP violations
}

// startBrowser runs headless Chromium (skips when it is absent, unless
// PALLASGW_E2E_REQUIRE=1) and opens one blank page of the given size;
// flags are added to Chromium's command line.
func startBrowser(t testing.TB, width, height int, flags ...string) *browser {
	t.Helper()
	bin := ""
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := findTool(name); err == nil {
			bin = p
			break
		}
	}
	if bin == "" {
		need(t, "chromium (Debian package chromium)", fmt.Errorf("not in PATH"))
	}
	cmdR, cmdW, err := os.Pipe() // commands: we write, Chromium reads fd 3
	if err != nil {
		t.Fatal(err)
	}
	outR, outW, err := os.Pipe() // answers: Chromium writes fd 4, we read
	if err != nil {
		t.Fatal(err)
	}
	// The flags that keep Chromium quiet on a machine without internet
	// (see the machine notes): no background networking, no component
	// updates, no sync, a fresh profile.
	cmd := exec.Command(bin, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--disable-default-apps", "--disable-extensions", "--mute-audio", "--hide-scrollbars",
		"--user-data-dir="+t.TempDir(), "--remote-debugging-pipe")
	cmd.Args = append(append(cmd.Args, flags...), "about:blank")
	cmd.ExtraFiles = []*os.File{cmdR, outW}
	b := &browser{t: t, in: cmdW, pending: map[int]chan cdpMsg{}}
	b.proc = startProc(t, "chromium", cmd)
	cmdR.Close()
	outW.Close()
	t.Cleanup(func() { cmdW.Close(); outR.Close() })
	go b.read(outR)

	var target struct {
		TargetID string `json:"targetId"`
	}
	b.call("", "Target.createTarget", map[string]any{"url": "about:blank"}, &target)
	var att struct {
		SessionID string `json:"sessionId"`
	}
	b.call("", "Target.attachToTarget", map[string]any{"targetId": target.TargetID, "flatten": true}, &att)
	b.session = att.SessionID
	for _, domain := range []string{"Page.enable", "Runtime.enable", "Log.enable"} {
		b.call(b.session, domain, nil, nil)
	}
	// Every Content-Security-Policy violation of every document the page
	// loads is kept in window.__cspViolations (CSPViolations).
	b.call(b.session, "Page.addScriptToEvaluateOnNewDocument", map[string]any{"source": `window.__cspViolations = [];
document.addEventListener("securitypolicyviolation", (e) => window.__cspViolations.push(e.violatedDirective + " " + e.blockedURI + " " + (e.sourceFile || "") + ":" + e.lineNumber));`}, nil)
	b.call(b.session, "Emulation.setDeviceMetricsOverride", map[string]any{
		"width": width, "height": height, "deviceScaleFactor": 1, "mobile": false}, nil)
	return b
}

func (b *browser) read(r *os.File) {
	br := bufio.NewReaderSize(r, 1<<20)
	for {
		raw, err := br.ReadBytes(0)
		if err != nil {
			b.mu.Lock()
			for id, ch := range b.pending {
				close(ch)
				delete(b.pending, id)
			}
			b.mu.Unlock()
			return
		}
		var m cdpMsg
		if json.Unmarshal(raw[:len(raw)-1], &m) != nil {
			continue
		}
		if m.ID != 0 {
			b.mu.Lock()
			ch := b.pending[m.ID]
			delete(b.pending, m.ID)
			b.mu.Unlock()
			if ch != nil {
				ch <- m
			}
			continue
		}
		b.event(m)
	}
}

// event records what a page should never do: throw, log an error, or
// break its Content-Security-Policy.
func (b *browser) event(m cdpMsg) {
	var problem string
	switch m.Method {
	case "Runtime.exceptionThrown":
		var p struct {
			ExceptionDetails struct {
				Text      string `json:"text"`
				Exception struct {
					Description string `json:"description"`
				} `json:"exception"`
			} `json:"exceptionDetails"`
		}
		json.Unmarshal(m.Params, &p)
		problem = "exception: " + p.ExceptionDetails.Text + " " + p.ExceptionDetails.Exception.Description
	case "Runtime.consoleAPICalled":
		var p struct {
			Type string            `json:"type"`
			Args []json.RawMessage `json:"args"`
		}
		json.Unmarshal(m.Params, &p)
		if p.Type == "error" {
			problem = "console.error: " + fmt.Sprint(rawStrings(p.Args))
		}
	case "Log.entryAdded":
		var p struct {
			Entry struct {
				Source, Level, Text, URL string
			} `json:"entry"`
		}
		json.Unmarshal(m.Params, &p)
		if p.Entry.Level == "error" || p.Entry.Source == "security" {
			problem = fmt.Sprintf("log %s/%s: %s (%s)", p.Entry.Source, p.Entry.Level, p.Entry.Text, p.Entry.URL)
		}
	}
	if problem != "" {
		b.problemsMu.Lock()
		b.problems = append(b.problems, problem)
		b.problemsMu.Unlock()
	}
}

func rawStrings(args []json.RawMessage) []string {
	var out []string
	for _, a := range args {
		out = append(out, string(a))
	}
	return out
}

// Problems are the page's exceptions, console errors and log errors
// (CSP violations among them) so far.
func (b *browser) Problems() []string {
	b.problemsMu.Lock()
	defer b.problemsMu.Unlock()
	return append([]string(nil), b.problems...)
}

// call sends one command and decodes its result into out (may be nil).
func (b *browser) call(session, method string, params any, out any) {
	b.t.Helper()
	if err := b.callErr(session, method, params, out); err != nil {
		b.t.Fatalf("chromium %s: %v", method, err)
	}
}

func (b *browser) callErr(session, method string, params any, out any) error {
	b.mu.Lock()
	b.nextID++
	id := b.nextID
	ch := make(chan cdpMsg, 1)
	b.pending[id] = ch
	b.mu.Unlock()
	msg := map[string]any{"id": id, "method": method}
	if params != nil {
		msg["params"] = params
	}
	if session != "" {
		msg["sessionId"] = session
	}
	raw, _ := json.Marshal(msg)
	if _, err := b.in.Write(append(raw, 0)); err != nil {
		return err
	}
	select {
	case m, ok := <-ch:
		if !ok {
			return fmt.Errorf("chromium closed the pipe")
		}
		if m.Error != nil {
			return fmt.Errorf("%d %s", m.Error.Code, m.Error.Message)
		}
		if out != nil {
			return json.Unmarshal(m.Result, out)
		}
		return nil
	case <-time.After(30 * time.Second):
		return fmt.Errorf("no answer within 30s")
	}
}

// Navigate loads url in the page and waits for its document to be
// complete.
func (b *browser) Navigate(url string) {
	b.t.Helper()
	b.call(b.session, "Page.navigate", map[string]any{"url": url}, nil)
	b.WaitTrue("the page to load", 20*time.Second, `document.readyState === "complete"`)
}

// Eval evaluates a JavaScript expression in the page (awaiting a
// promise) and decodes its value into out (may be nil).
func (b *browser) Eval(expr string, out any) error {
	var res struct {
		Result struct {
			Value json.RawMessage `json:"value"`
		} `json:"result"`
		ExceptionDetails *struct {
			Text      string `json:"text"`
			Exception struct {
				Description string `json:"description"`
			} `json:"exception"`
		} `json:"exceptionDetails"`
	}
	err := b.callErr(b.session, "Runtime.evaluate", map[string]any{"expression": expr, "awaitPromise": true, "returnByValue": true}, &res)
	if err != nil {
		return err
	}
	if res.ExceptionDetails != nil {
		return fmt.Errorf("%s %s", res.ExceptionDetails.Text, res.ExceptionDetails.Exception.Description)
	}
	if out != nil && len(res.Result.Value) > 0 {
		return json.Unmarshal(res.Result.Value, out)
	}
	return nil
}

// MustEval is Eval that fails the test on an error.
func (b *browser) MustEval(expr string, out any) {
	b.t.Helper()
	if err := b.Eval(expr, out); err != nil {
		b.t.Fatalf("evaluating %s: %v", expr, err)
	}
}

// WaitTrue polls a boolean expression until it is true, failing the test
// with the page's text after timeout.
func (b *browser) WaitTrue(what string, timeout time.Duration, expr string) {
	b.t.Helper()
	deadline := time.Now().Add(timeout)
	var last error
	for {
		var ok bool
		if last = b.Eval("Boolean("+expr+")", &ok); last == nil && ok {
			return
		}
		if time.Now().After(deadline) {
			var text string
			b.Eval(`document.body ? document.body.innerText : ""`, &text)
			b.t.Fatalf("timed out after %s waiting for %s (%s; error %v)\npage text:\n%s\nproblems: %q",
				timeout, what, expr, last, tail(text, 4000), b.Problems())
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// CSPViolations are the Content-Security-Policy violations of the current
// document so far.
func (b *browser) CSPViolations() []string {
	b.t.Helper()
	var v []string
	b.MustEval(`window.__cspViolations || []`, &v)
	return v
}

// Screenshot saves a PNG of the whole page to path.
func (b *browser) Screenshot(path string) {
	b.t.Helper()
	var shot struct {
		Data string `json:"data"`
	}
	b.call(b.session, "Page.captureScreenshot", map[string]any{"format": "png", "captureBeyondViewport": true}, &shot)
	png, err := base64.StdEncoding.DecodeString(shot.Data)
	if err != nil {
		b.t.Fatal(err)
	}
	if err := os.WriteFile(path, png, 0o644); err != nil {
		b.t.Fatal(err)
	}
}

// jsString quotes s as a JavaScript string literal.
func jsString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

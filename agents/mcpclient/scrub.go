package mcpclient

import (
	"encoding/json"
	"net/http"
	"strings"
)

// A downstream can echo what it was sent: a server that answers 401 with
// the request's headers in its body, or a JSON-RPC error that quotes the
// token it refused. Those texts end up in the call's error, which is
// logged and, in a tool loop, sent to the LLM provider as the tool's
// result. SPEC §10: no credential or forwarded header value appears in a
// log line or an error. So every error a call returns, and every log line
// of a session, has the values of the outbound headers of that call
// (static credentials and forwarded headers alike) replaced by
// redactedValue. Results are the downstream's data and pass unchanged.

const (
	redactedValue = "<redacted>"
	// minScrubbed is the shortest value replaced: shorter ones ("1",
	// "en") are not secrets and would garble the message.
	minScrubbed = 4
)

// scrubbedError is an error whose text had header values taken out; the
// chain is kept for errors.Is and errors.As.
type scrubbedError struct {
	msg string
	err error
}

func (e *scrubbedError) Error() string { return e.msg }
func (e *scrubbedError) Unwrap() error { return e.err }

// scrub returns err with every value of hdr taken out of its text, or err
// itself when its text holds none.
func scrub(err error, hdr http.Header) error {
	if err == nil || len(hdr) == 0 {
		return err
	}
	msg := err.Error()
	if out := scrubString(msg, hdr); out != msg {
		return &scrubbedError{msg: out, err: err}
	}
	return err
}

// scrubString replaces in s each value of hdr, the credential of a
// "scheme credential" value on its own, and each as it reads inside a JSON
// string (a body that quotes the value escapes some characters).
func scrubString(s string, hdr http.Header) string {
	for _, values := range hdr {
		for _, v := range values {
			s = replaceValue(s, v)
			if _, cred, ok := strings.Cut(v, " "); ok {
				s = replaceValue(s, strings.TrimSpace(cred))
			}
		}
	}
	return s
}

func replaceValue(s, v string) string {
	if len(v) < minScrubbed {
		return s
	}
	s = strings.ReplaceAll(s, v, redactedValue)
	if q, err := json.Marshal(v); err == nil && string(q[1:len(q)-1]) != v {
		s = strings.ReplaceAll(s, string(q[1:len(q)-1]), redactedValue)
	}
	return s
}

package mcpclient

import (
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strings"
)

// A downstream can echo what it was sent: a server that answers 401 with
// the request's headers in its body, or a JSON-RPC error that quotes the
// token it refused. Those texts end up in the call's error, which is
// logged and, in a tool loop, sent to the LLM provider as the tool's
// result. No credential or forwarded header value appears in a
// log line or an error. So every error a call returns, and every log line
// of a session, has the values of the outbound headers of that call
// (static credentials and forwarded headers alike) replaced by
// redactedValue, and so have the secrets of the server's own config
// (serverSecrets). Results are the downstream's data and pass unchanged.

const (
	redactedValue = "<redacted>"
	// minScrubbed is the shortest value replaced: shorter ones ("1",
	// "en") are not secrets and would garble the message.
	minScrubbed = 4
)

// scrubbedError is an error whose text had header values taken out; the
// chain is kept for errors.Is and errors.As, except that a downstream's
// JSON-RPC error in it (*RPCError, which callers answer their own callers
// with: its message and data as sent) is found scrubbed too (As).
type scrubbedError struct {
	msg string
	err error
	rpc *RPCError // the chain's *RPCError, scrubbed; nil: none
}

func (e *scrubbedError) Error() string { return e.msg }
func (e *scrubbedError) Unwrap() error { return e.err }

// As gives errors.As the scrubbed *RPCError before the chain's own.
func (e *scrubbedError) As(target any) bool {
	if t, ok := target.(**RPCError); ok && e.rpc != nil {
		*t = e.rpc
		return true
	}
	return false
}

// scrub returns err with every value of the headers hs taken out of its
// text and of a downstream JSON-RPC error's message and data in its chain,
// or err itself when they hold none.
func scrub(err error, hs ...http.Header) error {
	if err == nil {
		return err
	}
	msg := err.Error()
	out := scrubString(msg, hs...)
	var rpc *RPCError
	if errors.As(err, &rpc) {
		clean := &RPCError{Code: rpc.Code, Message: scrubString(rpc.Message, hs...), Data: rpc.Data}
		if len(rpc.Data) > 0 {
			clean.Data = json.RawMessage(scrubString(string(rpc.Data), hs...))
		}
		if clean.Message != rpc.Message || string(clean.Data) != string(rpc.Data) {
			return &scrubbedError{msg: out, err: err, rpc: clean}
		}
	}
	if out != msg {
		return &scrubbedError{msg: out, err: err}
	}
	return err
}

// scrubString replaces in s each value of the headers hs, the credential
// of a "scheme credential" value on its own, and each as it reads inside a
// JSON string (a body that quotes the value escapes some characters). The
// longest go first: a short value that is part of a longer one ("acme" in
// "acme_s3cr3t") would otherwise leave the rest of it in place.
func scrubString(s string, hs ...http.Header) string {
	var secrets []string
	add := func(v string) {
		v = strings.TrimSpace(v)
		if len(v) < minScrubbed {
			return
		}
		secrets = append(secrets, v)
		if q, err := json.Marshal(v); err == nil && string(q[1:len(q)-1]) != v {
			secrets = append(secrets, string(q[1:len(q)-1]))
		}
	}
	for _, hdr := range hs {
		for _, values := range hdr {
			for _, v := range values {
				add(v)
				if _, cred, ok := strings.Cut(v, " "); ok {
					add(cred)
				}
			}
		}
	}
	if len(secrets) == 0 {
		return s
	}
	slices.SortFunc(secrets, func(a, b string) int { return len(b) - len(a) })
	for _, v := range secrets {
		s = strings.ReplaceAll(s, v, redactedValue)
	}
	return s
}

// serverSecrets are the values of a server's own config that are as secret
// as a credential, in the form scrub takes: a stdio server's env values
// whose names say they are secrets (its stderr and errors may print them),
// the user and password of a URL among them, and what the server's URL
// carries (user, password, and query values whose names say they are
// secrets: hosted servers often take a key there; Go hides only the
// password when it prints a URL), and the values the spec names in Redact
// (what the config took from the environment: a token in the args of a
// command is as secret as one in its env). Other values ("debug",
// "production") stay readable.
func serverSecrets(spec ServerSpec) http.Header {
	h := http.Header{}
	for _, v := range spec.Redact {
		h.Add("redact", v)
	}
	for name, v := range spec.Env {
		if secretName.MatchString(name) {
			h.Add("env", v)
		}
		urlSecrets(h, v)
	}
	urlSecrets(h, spec.URL)
	if len(h) == 0 {
		return nil
	}
	return h
}

// secretName matches the names of variables and query parameters that
// hold secrets by the usual spellings (API_KEY, access_token, password,
// X-Amz-Signature, ...).
var secretName = regexp.MustCompile(`(?i)key|token|secret|pass|pwd|auth|cred|cookie|session|sig`)

// urlSecrets adds the user, the password and the secret-named query values
// of raw, when it is a URL with any.
func urlSecrets(h http.Header, raw string) {
	if !strings.Contains(raw, "://") {
		return
	}
	u, err := url.Parse(raw)
	if err != nil {
		return
	}
	if u.User != nil {
		h.Add("url", u.User.Username())
		if pw, ok := u.User.Password(); ok {
			h.Add("url", pw)
		}
	}
	for name, vs := range u.Query() {
		if secretName.MatchString(name) {
			for _, v := range vs {
				h.Add("url", v)
				h.Add("url", url.QueryEscape(v))
			}
		}
	}
}

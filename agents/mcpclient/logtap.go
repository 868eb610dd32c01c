package mcpclient

import (
	"net/http"
	"strings"

	"github.com/pallasgw/pallasgw/agents/wire"
)

// tapResponse wraps the body of resp when it is the SSE response stream of a
// request whose context carries a call tag (see Relay), so that the call's
// log messages can be routed to it (wire.NewLogTagger).
func tapResponse(req *http.Request, resp *http.Response) {
	tag := callOf(req.Context()).tag
	if tag == "" || resp.Body == nil || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		return
	}
	resp.Body = wire.NewLogTagger(resp.Body, callTag, tag)
}

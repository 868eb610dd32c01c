package codemode

import (
	"context"
	"encoding/json"
	"errors"
	"sync/atomic"

	"github.com/pallasgw/pallasgw/agents/mcpclient"
)

// errInput is a tool inside a script that asked the caller for input.
var errInput = errors.New("the tool asked the caller for input (elicitation, sampling, roots or input_required), " +
	"which a tool called inside run_script cannot do in this version; call it directly instead")

// NoInput is the Relay of a script's downstream call
// (mcpclient.CallOptions.Relay): the downstream's requests for the caller's
// input (elicitation, sampling, roots) are refused, and asked reports one
// (an error that stops the script).
func NoInput() (_ *mcpclient.Relay, asked func() error) {
	var n atomic.Bool
	relay := &mcpclient.Relay{Request: func(context.Context, string, json.RawMessage) (json.RawMessage, error) {
		n.Store(true)
		return nil, &mcpclient.RPCError{Code: -32601, Message: "run_script: a tool called inside a script cannot ask the caller for input"}
	}}
	return relay, func() error {
		if n.Load() {
			return errInput
		}
		return nil
	}
}

package wire

import (
	"os"
	"sync/atomic"
)

// EnvFast is the environment variable that turns the switch off for a
// process whatever its config says ("off"); CI runs the end-to-end suite
// once so.
const EnvFast = "PALLASGW_WIRE_FAST"

// fast is the switch of this process: the config's wire.fast, unless the
// environment says off. It is read at start (SetFast); until then it is
// the environment's word alone.
var fast atomic.Bool

func init() { fast.Store(os.Getenv(EnvFast) != "off") }

// Fast reports whether the hand-written paths of this package serve MCP in
// this process: the server-side tools/call (Serve), raw results passed
// through (RawResponse), and every raw downstream tools/call (ClientCall:
// a proxy's, a toolbox's, the tool loop's). Off, mcp-go serves and calls
// every request, except what mcp-go's server cannot do at all
// (ServeRoundTrip).
func Fast() bool { return fast.Load() }

// SetFast sets the switch at start from the config's wire.fast; the
// environment's "off" wins. It returns the switch as set. A reload does not
// call it: a change takes a restart.
func SetFast(configured bool) bool {
	on := configured && os.Getenv(EnvFast) != "off"
	fast.Store(on)
	return on
}

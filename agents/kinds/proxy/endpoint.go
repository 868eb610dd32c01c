package proxy

// What the agent's endpoint asks of a proxy beyond its fast tools/call
// (agents/endpoint kinds.go, agents/bridge catalog.go): each capability is
// an interface of package endpoint or bridge, asserted here so that a proxy that stops implementing one
// fails to build instead of silently losing the path.

import (
	"github.com/pallasgw/pallasgw/agents/bridge"
	"github.com/pallasgw/pallasgw/agents/endpoint"
)

var (
	_ endpoint.SetLevelAnswerer       = (*Proxy)(nil) // caller.go
	_ endpoint.TaskRouter             = (*Proxy)(nil) // tasks.go
	_ endpoint.ToolEnsurer            = (*Proxy)(nil) // fast.go
	_ endpoint.ParamHeaderChecker     = (*Proxy)(nil) // headers.go
	_ bridge.Catalog                  = (*Proxy)(nil) // bridged.go
	_ bridge.InputRequiredPassThrough = (*Proxy)(nil)
)

// PassesInputRequired marks the proxy's answer to a tools/call as possibly
// a downstream's own input_required result (the downstream's result as it
// came), which the input-required bridge passes through to a 2026-07-28
// caller, the downstream's requestState sealed inside its own.
func (*Proxy) PassesInputRequired() {}

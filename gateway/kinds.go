package gateway

// The agent kinds this program serves: each package registers its kind
// with the agents core in init (agents.Register), as CoreDNS's plugin.cfg
// lists its plug-ins. A new kind is one directory under agents/kinds and
// one line here.
import (
	_ "github.com/pallasgw/pallasgw/agents/kinds/proxy"
	_ "github.com/pallasgw/pallasgw/agents/kinds/toolbox"
	_ "github.com/pallasgw/pallasgw/agents/kinds/workflow"
)

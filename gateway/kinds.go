package gateway

// The agent kinds this program serves: each package registers its kind
// with the agents core in init (agents.Register), as CoreDNS's plugin.cfg
// lists its plug-ins. A new kind is one directory under agents/kinds, one
// line here and its name in the config's schema (config.Kinds).

import (
	"fmt"
	"slices"

	"github.com/pallasgw/pallasgw/agents"
	_ "github.com/pallasgw/pallasgw/agents/kinds/proxy"
	_ "github.com/pallasgw/pallasgw/agents/kinds/toolbox"
	_ "github.com/pallasgw/pallasgw/agents/kinds/toolloop"
	_ "github.com/pallasgw/pallasgw/agents/kinds/workflow"
	"github.com/pallasgw/pallasgw/gateway/config"
)

// checkKinds reports a kind the config accepts that no package registered
// (its import is missing above): a config naming it would validate and
// then fail to build.
func checkKinds() error {
	registered := agents.Kinds()
	var missing []string
	for _, k := range config.Kinds() {
		if !slices.Contains(registered, k) {
			missing = append(missing, k)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("agent kinds %v have no registered factory (gateway/kinds.go imports each kind's package)", missing)
	}
	return nil
}

package arch

import (
	"go/ast"
	"slices"
	"strings"
	"testing"

	"github.com/pallasgw/pallasgw/agents"
	_ "github.com/pallasgw/pallasgw/gateway" // registers the kinds the program serves (gateway/kinds.go)
	"github.com/pallasgw/pallasgw/gateway/config"
)

// Kinds are plug-ins (issue 41, step 6): the agents core and the endpoint
// build and serve an agent through what its kind registered, and name no
// kind.

// neutral are the packages that serve every kind alike.
var neutral = []string{"agents", "agents/endpoint"}

// knownKindNames are today's sites where a neutral package names a kind
// ("pkg: config.KindX"); none since the llm kind left the core.
var knownKindNames = []string{}

// The agents core and the endpoint import no kind's package and name no
// config.Kind* constant: a kind is reached through the Kind its factory
// returned, never asked for by name.
func TestCoreNamesNoKind(t *testing.T) {
	s := loadSource(t)
	var found []string
	for _, p := range s.Packages {
		if !slices.Contains(neutral, p.Rel) {
			continue
		}
		for _, f := range p.Files {
			imps := s.Imports(f.AST)
			for _, ip := range imps {
				if strings.HasPrefix(ip, Module+"/agents/kinds/") {
					t.Errorf("%s imports %s: the core reaches a kind through agents.Register, not its package", f.Rel, ip)
				}
			}
			ast.Inspect(f.AST, func(n ast.Node) bool {
				sel, ok := n.(*ast.SelectorExpr)
				if !ok {
					return true
				}
				if id, ok := sel.X.(*ast.Ident); ok && imps[id.Name] == Module+"/gateway/config" && strings.HasPrefix(sel.Sel.Name, "Kind") {
					found = append(found, p.Rel+": config."+sel.Sel.Name)
				}
				return true
			})
		}
	}
	ratchet(t, "knownKindNames", knownKindNames, found,
		"serve the kind through what its Kind offers (agents/kind.go); only a kind's own package names its kind")
}

// Every kind a config may name has a registered factory, and nothing else
// is registered: a config that validates builds.
func TestEveryKindRegistered(t *testing.T) {
	if got, want := agents.Kinds(), config.Kinds(); !slices.Equal(got, want) {
		t.Errorf("registered kinds %v, config's kinds %v: each kind's package calls agents.Register in init and gateway/kinds.go imports it", got, want)
	}
}

package config

import (
	"go.yaml.in/yaml/v3"
)

// positions is where a loaded config's keys are written: the file's tree
// and its agent cards' front matter. It is read only.
type positions struct {
	root  *yaml.Node
	cards map[string]card
}

// ErrorAt is a problem with the key path of c found after loading (a
// reload that cannot apply the config, a port that cannot be bound),
// placed at that key's line like the errors of Load: in the agent card for
// an agent that came from one, at the deepest key of path present.
func (c *Config) ErrorAt(path []string, msg string) Error {
	e := Error{File: c.File, Key: keyName(path), Msg: msg}
	if c.pos == nil {
		return e
	}
	if len(path) >= 2 && path[0] == "agents" {
		if cd, ok := c.pos.cards[path[1]]; ok {
			e.File, e.Line = cd.file, 1
			if len(path) > 2 {
				e.Line = lineOf(cd.root, path[2:])
			}
			return e
		}
	}
	e.Line = lineOf(c.pos.root, path)
	return e
}

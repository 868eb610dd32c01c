package config

import (
	"bytes"
	"fmt"
	"hash"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Agent cards: each *.md file of an agent_cards directory is one
// agent. Its YAML front matter, between a first line "---" and the next
// "---" line, holds the agent keys plus name (default: the file name
// without .md); the body below is the instruction. Front matter is expanded
// from the environment like the config file. Problems are reported against
// the card's own file and line, for the load and for every later check of
// that agent (the parser's cards map redirects them).

// card is where one agent of a card came from.
type card struct {
	file string
	root *yaml.Node // the front matter mapping, lines as in the file
}

var typeOfAgent = reflect.TypeOf(Agent{})

// loadCards reads the agent_cards directories of c into c.Agents and
// writes every card's path and bytes into h (the config hash).
func (p *parser) loadCards(c *Config, h hash.Hash) {
	for i, dir := range c.AgentCards {
		if !filepath.IsAbs(dir) {
			dir = filepath.Join(filepath.Dir(p.file), dir)
		}
		if abs, err := filepath.Abs(dir); err == nil {
			c.AgentCardDirs = append(c.AgentCardDirs, abs) // as the watcher's events name them
		}
		if st, err := os.Stat(dir); err != nil || !st.IsDir() {
			p.addPath([]string{"agent_cards", fmt.Sprint(i)}, fmt.Sprintf("%s is not a directory", dir))
			continue
		}
		files, err := filepath.Glob(filepath.Join(dir, "*.md"))
		if err != nil {
			p.addPath([]string{"agent_cards", fmt.Sprint(i)}, err.Error())
			continue
		}
		sort.Strings(files)
		for _, f := range files {
			raw, err := os.ReadFile(f)
			if err != nil {
				p.errs.List = append(p.errs.List, Error{File: f, Msg: err.Error()})
				continue
			}
			h.Write([]byte(f))
			h.Write(raw)
			p.loadCard(c, f, raw)
		}
	}
}

// loadCard parses one card and adds its agent to c. Unknown keys and
// values of the wrong type are reported and the agent is added without
// them; a card that is not YAML at all adds an empty agent of its file's
// name. Either way the rest of the config is still checked: every problem
// of the cards and of the file is reported at once.
func (p *parser) loadCard(c *Config, file string, raw []byte) {
	cp := &parser{file: file, errs: p.errs, env: p.env}
	name := strings.TrimSuffix(filepath.Base(file), ".md")
	root := &yaml.Node{Kind: yaml.MappingNode, Line: 1}
	front, body, ok := splitFrontMatter(raw)
	if !ok {
		cp.add(1, "", `an agent card starts with a "---" line, its YAML front matter, and a closing "---" line`)
		p.addCardAgent(c, cp, name, root, &Agent{})
		return
	}
	expanded := cp.expandText(front)
	var doc yaml.Node
	if err := yaml.Unmarshal(expanded, &doc); err != nil {
		cp.syntaxError(expanded, err) // front keeps the file's lines
		p.addCardAgent(c, cp, name, root, &Agent{})
		return
	}
	if len(doc.Content) > 0 {
		root = doc.Content[0]
	}
	if root.Kind != yaml.MappingNode {
		cp.add(1, "", "front matter must be a YAML mapping")
		p.addCardAgent(c, cp, name, &yaml.Node{Kind: yaml.MappingNode, Line: 1}, &Agent{})
		return
	}
	for i := 0; i+1 < len(root.Content); i += 2 {
		if root.Content[i].Value == "name" {
			name = root.Content[i+1].Value
			root.Content = append(root.Content[:i:i], root.Content[i+2:]...) // not an Agent key
			break
		}
	}
	cp.fastAgentCard(root, name)
	checkKnownKeys(cp, root, typeOfAgent, []string{"agents", name})
	a := &Agent{}
	if err := root.Decode(a); err != nil {
		cp.yamlError(err)
		a = &Agent{}
	}
	if instr := strings.TrimSpace(string(body)); instr != "" {
		if a.Instruction != "" {
			cp.add(lineOf(root, []string{"instruction"}), "instruction", "set either the instruction key or the body, not both")
		} else {
			a.Instruction = instr
		}
	}
	p.addCardAgent(c, cp, name, root, a)
}

// addCardAgent adds the agent a of the card cp reads, unless its name is
// taken.
func (p *parser) addCardAgent(c *Config, cp *parser, name string, root *yaml.Node, a *Agent) {
	if prev, dup := p.cards[name]; dup {
		cp.add(1, "name", fmt.Sprintf("agent %q is also defined by %s", name, prev.file))
		return
	}
	if _, dup := c.Agents[name]; dup {
		cp.add(1, "name", fmt.Sprintf("agent %q is also defined in %s at line %d", name, p.file, lineOf(p.root, []string{"agents", name})))
		return
	}
	if c.Agents == nil {
		c.Agents = map[string]*Agent{}
	}
	c.Agents[name] = a
	p.cards[name] = card{file: cp.file, root: root}
}

// splitFrontMatter cuts a card into its front matter, with the opening
// "---" line kept as an empty line so that YAML line numbers are the
// file's, and its body.
func splitFrontMatter(raw []byte) (front, body []byte, ok bool) {
	raw = bytes.TrimPrefix(raw, []byte("\xef\xbb\xbf")) // a BOM
	first, rest, found := bytes.Cut(raw, []byte("\n"))
	if !found || string(bytes.TrimRight(first, " \t\r")) != "---" {
		return nil, nil, false
	}
	lines := bytes.SplitAfter(rest, []byte("\n"))
	for i, l := range lines {
		if t := string(bytes.TrimRight(l, " \t\r\n")); t == "---" || t == "..." {
			front = append([]byte("\n"), bytes.Join(lines[:i], nil)...)
			return front, bytes.Join(lines[i+1:], nil), true
		}
	}
	return nil, nil, false
}

// cardOf is the card an error path under agents.<name> belongs to.
func (p *parser) cardOf(path []string) (card, bool) {
	if len(path) < 2 || path[0] != "agents" {
		return card{}, false
	}
	c, ok := p.cards[path[1]]
	return c, ok
}

// agentKey finds a key of an agent's own mapping, in the config file or in
// its card.
func (p *parser) agentKey(name, key string) *yaml.Node {
	if c, ok := p.cards[name]; ok {
		return lookup(c.root, []string{key})
	}
	return lookup(p.root, []string{"agents", name, key})
}

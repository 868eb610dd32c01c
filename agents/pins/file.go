package pins

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"
)

// File is the content of a pins file: per server and tool, the approved
// definition and the rejected hashes. A File is not safe for concurrent
// writes; the Guard holds one read-only.
type File struct {
	Servers map[string]map[string]*Entry
}

// Entry is one tool's pin. Hash and Definition are empty for a tool whose
// only record is a rejection.
type Entry struct {
	Hash       string          // "sha256:<hex>" of Definition
	Definition json.RawMessage // the approved definition, canonical JSON (RFC 8785)
	Rejected   []string        // hashes a reviewer turned down
}

var hashRE = regexp.MustCompile(`^sha256:[0-9a-f]{64}$`)

// Load reads and validates the pins file at path. A missing file is an
// error: pins are created by `pallasgw pins init`, never at run time.
func Load(path string) (*File, error) {
	raw, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("pins file %s: %w (create it with `pallasgw pins init`)", path, os.ErrNotExist)
	}
	if err != nil {
		return nil, fmt.Errorf("pins file: %w", err)
	}
	return Parse(path, raw)
}

// Parse decodes and validates a pins file's bytes; errors read
// "file:line: key: message".
func Parse(path string, raw []byte) (*File, error) {
	f := &File{Servers: map[string]map[string]*Entry{}}
	var doc yaml.Node
	if err := yaml.Unmarshal(raw, &doc); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if len(doc.Content) == 0 { // an empty file pins nothing
		return f, nil
	}
	p := &fileParser{path: path}
	p.root(doc.Content[0], f)
	if len(p.errs) > 0 {
		return nil, errors.New(strings.Join(p.errs, "\n"))
	}
	return f, nil
}

type fileParser struct {
	path string
	errs []string
}

func (p *fileParser) fail(n *yaml.Node, key, format string, args ...any) {
	p.errs = append(p.errs, fmt.Sprintf("%s:%d: %s: %s", p.path, n.Line, key, fmt.Sprintf(format, args...)))
}

// pairs walks a mapping node's key/value pairs, reporting a node that is
// not a mapping.
func (p *fileParser) pairs(n *yaml.Node, key string, each func(k string, kn, v *yaml.Node)) {
	if n.Kind != yaml.MappingNode {
		p.fail(n, key, "must be a mapping")
		return
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		each(n.Content[i].Value, n.Content[i], n.Content[i+1])
	}
}

func (p *fileParser) root(n *yaml.Node, f *File) {
	p.pairs(n, "(top)", func(k string, kn, v *yaml.Node) {
		if k != "servers" {
			p.fail(kn, k, "unknown key (want servers)")
			return
		}
		p.pairs(v, "servers", func(server string, _, tools *yaml.Node) {
			f.Servers[server] = map[string]*Entry{}
			p.pairs(tools, "servers."+server, func(tool string, _, e *yaml.Node) {
				f.Servers[server][tool] = p.entry(e, "servers."+server+"."+tool, tool)
			})
		})
	})
}

func (p *fileParser) entry(n *yaml.Node, key, tool string) *Entry {
	e := &Entry{}
	p.pairs(n, key, func(k string, kn, v *yaml.Node) {
		switch k {
		case "hash":
			e.Hash = v.Value
			if !hashRE.MatchString(e.Hash) {
				p.fail(v, key+".hash", "want sha256: and 64 lowercase hex digits")
			}
		case "definition":
			if v.Kind != yaml.ScalarNode {
				p.fail(v, key+".definition", "must be the definition's JSON as a string")
				return
			}
			e.Definition = json.RawMessage(v.Value)
		case "rejected":
			if err := v.Decode(&e.Rejected); err != nil {
				p.fail(v, key+".rejected", "must be a list of hashes")
			}
			for _, h := range e.Rejected {
				if !hashRE.MatchString(h) {
					p.fail(v, key+".rejected", "%q: want sha256: and 64 lowercase hex digits", h)
				}
			}
		default:
			p.fail(kn, key+"."+k, "unknown key (want hash, definition, rejected)")
		}
	})
	p.checkDefinition(n, key, tool, e)
	return e
}

// checkDefinition checks that an approved entry's definition is the one
// its hash names and belongs to its tool: a hand edit of either is caught
// at load, not served.
func (p *fileParser) checkDefinition(n *yaml.Node, key, tool string, e *Entry) {
	switch {
	case e.Hash == "" && len(e.Rejected) == 0:
		p.fail(n, key, "needs a hash (approved) or rejected hashes")
	case e.Hash == "" && len(e.Definition) > 0:
		p.fail(n, key, "a definition needs its hash")
	case e.Hash != "" && len(e.Definition) == 0:
		p.fail(n, key, "an approved hash needs its definition (for the review diff)")
	case e.Hash != "":
		d, err := Definition(e.Definition)
		switch {
		case err != nil:
			p.fail(n, key+".definition", "%v", err)
		case d.Hash != e.Hash:
			p.fail(n, key+".hash", "does not match the definition (its hash is %s)", d.Hash)
		case d.Name != tool:
			p.fail(n, key+".definition", "names tool %q", d.Name)
		default:
			e.Definition = d.Canonical
		}
	}
}

// Lookup returns the entry of server's tool, or nil.
func (f *File) Lookup(server, tool string) *Entry {
	if f == nil {
		return nil
	}
	return f.Servers[server][tool]
}

// Approve pins d as server's approved definition of its tool; a hash it
// had rejected before is no longer rejected.
func (f *File) Approve(server string, d Def) {
	e := f.entry(server, d.Name)
	e.Hash, e.Definition = d.Hash, d.Canonical
	e.Rejected = slices.DeleteFunc(e.Rejected, func(h string) bool { return h == d.Hash })
}

// Reject records hash as turned down for server's tool.
func (f *File) Reject(server, tool, hash string) {
	e := f.entry(server, tool)
	if !slices.Contains(e.Rejected, hash) {
		e.Rejected = append(e.Rejected, hash)
	}
}

func (f *File) entry(server, tool string) *Entry {
	if f.Servers == nil {
		f.Servers = map[string]map[string]*Entry{}
	}
	if f.Servers[server] == nil {
		f.Servers[server] = map[string]*Entry{}
	}
	e := f.Servers[server][tool]
	if e == nil {
		e = &Entry{}
		f.Servers[server][tool] = e
	}
	return e
}

// header opens every pins file written by pallasgw.
const header = "# pallasgw tool pins: per server and tool, the approved definition (canonical JSON,\n" +
	"# RFC 8785) and its SHA-256, and the hashes a reviewer rejected. Written by\n" +
	"# `pallasgw pins init|approve|reject` and the console; a reload applies it.\n"

// Marshal encodes f as YAML: servers and tools sorted, each definition
// indented JSON in a literal block (a reviewer reads it in a diff).
func (f *File) Marshal() ([]byte, error) {
	servers := &yaml.Node{Kind: yaml.MappingNode}
	for _, server := range sortedKeys(f.Servers) {
		tools := &yaml.Node{Kind: yaml.MappingNode}
		for _, tool := range sortedKeys(f.Servers[server]) {
			e, err := entryNode(f.Servers[server][tool])
			if err != nil {
				return nil, fmt.Errorf("pins: %s/%s: %w", server, tool, err)
			}
			tools.Content = append(tools.Content, scalar(tool), e)
		}
		servers.Content = append(servers.Content, scalar(server), tools)
	}
	root := &yaml.Node{Kind: yaml.MappingNode, Content: []*yaml.Node{scalar("servers"), servers}}
	var buf bytes.Buffer
	buf.WriteString(header)
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(2)
	if err := enc.Encode(&yaml.Node{Kind: yaml.DocumentNode, Content: []*yaml.Node{root}}); err != nil {
		return nil, fmt.Errorf("pins: encoding: %w", err)
	}
	return buf.Bytes(), enc.Close()
}

func entryNode(e *Entry) (*yaml.Node, error) {
	n := &yaml.Node{Kind: yaml.MappingNode}
	if e.Hash != "" {
		var pretty bytes.Buffer
		if err := json.Indent(&pretty, e.Definition, "", "  "); err != nil {
			return nil, fmt.Errorf("definition: %w", err)
		}
		def := scalar(pretty.String() + "\n")
		def.Style = yaml.LiteralStyle
		n.Content = append(n.Content, scalar("hash"), scalar(e.Hash), scalar("definition"), def)
	}
	if len(e.Rejected) > 0 {
		list := &yaml.Node{Kind: yaml.SequenceNode}
		for _, h := range e.Rejected {
			list.Content = append(list.Content, scalar(h))
		}
		n.Content = append(n.Content, scalar("rejected"), list)
	}
	return n, nil
}

func scalar(v string) *yaml.Node { return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: v} }

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

package pins

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"

	"github.com/gowebpki/jcs"
)

// HashPrefix starts every hash in the pins file.
const HashPrefix = "sha256:"

// definitionKeys are the members of a tool object that make up its
// definition: what a model or a reviewer reads. Other members (_meta,
// icons, execution) are left out, so that a server that stamps a list
// with, say, a timestamp in _meta does not change its tools' hashes.
var definitionKeys = []string{"name", "title", "description", "inputSchema", "outputSchema", "annotations"}

// Def is one tool definition as a downstream sent it: its canonical JSON
// (RFC 8785) and the SHA-256 of that, as "sha256:<hex>".
type Def struct {
	Name      string
	Canonical []byte
	Hash      string
}

// Definition canonicalises a tool object as the server sent it (the raw
// JSON of one entry of a tools/list result) and hashes it.
func Definition(raw json.RawMessage) (Def, error) {
	var all map[string]json.RawMessage
	if err := json.Unmarshal(raw, &all); err != nil {
		return Def{}, fmt.Errorf("tool definition: %w", err)
	}
	kept := make(map[string]json.RawMessage, len(definitionKeys))
	for _, k := range definitionKeys {
		if v, ok := all[k]; ok && string(v) != "null" {
			kept[k] = v
		}
	}
	var name string
	if err := json.Unmarshal(kept["name"], &name); err != nil || name == "" {
		return Def{}, fmt.Errorf("tool definition: no name")
	}
	b, err := json.Marshal(kept)
	if err != nil {
		return Def{}, fmt.Errorf("tool %q: definition: %w", name, err)
	}
	canon, err := jcs.Transform(b)
	if err != nil {
		return Def{}, fmt.Errorf("tool %q: canonicalising (RFC 8785): %w", name, err)
	}
	return Def{Name: name, Canonical: canon, Hash: hashOf(canon)}, nil
}

// hashOf is the pins-file form of the SHA-256 of canonical JSON.
func hashOf(canon []byte) string {
	sum := sha256.Sum256(canon)
	return HashPrefix + hex.EncodeToString(sum[:])
}

package config

import "encoding/json"

// Secret is a string that never prints: fmt, JSON, YAML and zap (through
// String) all show "<secret>". Use Value to read it where it is needed.
type Secret string

const redacted = "<secret>"

// Value returns the secret itself.
func (s Secret) Value() string { return string(s) }

// String implements fmt.Stringer.
func (s Secret) String() string {
	if s == "" {
		return ""
	}
	return redacted
}

// GoString implements fmt.GoStringer (%#v).
func (s Secret) GoString() string { return s.String() }

// MarshalJSON implements json.Marshaler.
func (s Secret) MarshalJSON() ([]byte, error) { return json.Marshal(s.String()) }

// MarshalYAML implements yaml.Marshaler.
func (s Secret) MarshalYAML() (any, error) { return s.String(), nil }

// MarshalText implements encoding.TextMarshaler.
func (s Secret) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

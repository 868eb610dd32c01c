package config

import (
	"fmt"
	"strings"
)

// warnEmptyCredentials warns of each header of a server whose value has no
// credential (empty, or an auth scheme alone such as "Bearer") because a
// ${VAR} on its line expanded to "": what pallasgw import writes for an
// unset variable. Such a header is not sent (EmptyCredential).
func (p *parser) warnEmptyCredentials(c *Config) {
	for _, name := range sortedKeys(c.MCP.Servers) {
		s := c.MCP.Servers[name]
		if s == nil {
			continue
		}
		for _, h := range sortedKeys(s.Headers) {
			if !EmptyCredential(h, s.Headers[h].Value()) {
				continue
			}
			key := []string{"mcp", "servers", name, "headers", h}
			line := lineOf(p.root, key)
			vars := p.empty[line]
			if len(vars) == 0 {
				continue
			}
			refs := make([]string, len(vars))
			for i, v := range vars {
				refs[i] = "${" + v + "}"
			}
			c.Warnings = append(c.Warnings, fmt.Sprintf("%s:%d: %s: %s is empty or unset, so header %s has no credential and is not sent",
				p.file, line, keyName(key), strings.Join(refs, ", "), h))
		}
	}
}

// EmptyCredential reports whether static header name: v carries no
// credential: a blank value, or for Authorization and Proxy-Authorization
// an auth scheme alone ("Bearer", "Basic", "Token", "Digest"), as "Bearer
// ${TOKEN:-}" expands with TOKEN unset. Such a header is not sent.
func EmptyCredential(name, v string) bool {
	v = strings.ToLower(strings.TrimSpace(v))
	if v == "" {
		return true
	}
	switch strings.ToLower(name) {
	case "authorization", "proxy-authorization":
		switch v {
		case "bearer", "basic", "token", "digest":
			return true
		}
	}
	return false
}

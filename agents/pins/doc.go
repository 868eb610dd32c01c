// Package pins owns tool pinning and the poisoning checks: the hash of a
// downstream tool's definition (SHA-256 over its RFC 8785 canonical JSON),
// the pins file (YAML of approved and rejected definitions per server and
// tool: load, validate, and atomic serialised rewrites), the checks every
// definition goes through (invisible Unicode, over-long descriptions,
// operator regexes), and the Guard, which decides at tool-list time which
// tools a server's list shows and, at call time, which calls are refused
// because their tool awaits approval.
//
// A definition is hashed when a tool list is read from the downstream
// (mcpclient calls Guard.Filter with the raw JSON it received), never per
// call: a call costs one map lookup.
//
// It must not talk to downstreams, read the config file or decide policy
// other than pins and checks; it imports no project package but metrics.
package pins

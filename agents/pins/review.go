package pins

import (
	"fmt"
	"slices"
	"strings"
)

// Review records a reviewer's decision on d, server's live definition of
// a tool, in the pins file at path: approve pins it, else its hash is
// rejected. The rewrite is Update's (locked, re-read, atomic rename), so
// `pallasgw pins approve|reject` and the console write the same way; a
// running gateway applies it at its next reload.
func Review(path, server string, d Def, approve bool) error {
	return Update(path, func(f *File) error {
		f.Review(server, d, approve)
		return nil
	})
}

// Review applies a reviewer's decision on d to f (Approve or Reject).
func (f *File) Review(server string, d Def, approve bool) {
	if approve {
		f.Approve(server, d)
		return
	}
	f.Reject(server, d.Name, d.Hash)
}

// ReviewedEntry is the YAML of server's tool entry as Review would leave
// it in f (which is not changed; may be nil), for an operator to apply by
// hand where the pins file is not writable: the servers/server/tool
// nesting of a pins file, without its header.
func ReviewedEntry(f *File, server string, d Def, approve bool) (string, error) {
	one := &File{}
	if e := f.Lookup(server, d.Name); e != nil {
		cp := *e
		cp.Rejected = slices.Clone(e.Rejected)
		one.entry(server, d.Name)
		one.Servers[server][d.Name] = &cp
	}
	one.Review(server, d, approve)
	out, err := one.Marshal()
	if err != nil {
		return "", err
	}
	return strings.TrimPrefix(string(out), header), nil
}

// ReviewCommand is the shell command that records the same decision from
// an operator's checkout: `pallasgw pins approve|reject --config FILE
// --hash H SERVER TOOL` (the hash makes it refuse a definition other than
// the one reviewed).
func ReviewCommand(configFile, server string, d Def, approve bool) string {
	verb := "approve"
	if !approve {
		verb = "reject"
	}
	return fmt.Sprintf("pallasgw pins %s --config %s --hash %s %s %s", verb, shellQuote(configFile), d.Hash, shellQuote(server), shellQuote(d.Name))
}

// shellQuote quotes s for a POSIX shell when it needs it.
func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./:=@+,") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

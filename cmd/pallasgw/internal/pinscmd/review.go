package pinscmd

import (
	"fmt"
	"slices"

	"github.com/pallasgw/pallasgw/agents/pins"
)

// init pins every live definition of every pinned server, keeping the
// rejections already recorded.
func (c *command) init() error {
	servers := c.pinned()
	if len(servers) == 0 {
		return fmt.Errorf("no server has pin_tools warn or enforce")
	}
	live := map[string]map[string]pins.Def{}
	for _, s := range servers {
		defs, err := c.live(s)
		if err != nil {
			return err
		}
		live[s] = defs
	}
	err := pins.Update(c.cfg.PinsPath, func(f *pins.File) error {
		for _, s := range servers {
			for _, d := range live[s] {
				f.Approve(s, d)
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	for _, s := range servers {
		fmt.Fprintf(c.stdout, "%s: %d tools pinned\n", s, len(live[s]))
	}
	fmt.Fprintf(c.stdout, "wrote %s\n", c.cfg.PinsPath)
	return nil
}

// diff prints, per pinned server, each live definition that is new or
// differs from its pin, as a line diff; changed reports whether any did.
func (c *command) diff() (changed bool, err error) {
	f, err := pins.Load(c.cfg.PinsPath)
	if err != nil {
		return false, err
	}
	for _, s := range c.pinned() {
		defs, err := c.live(s)
		if err != nil {
			return changed, err
		}
		names := make([]string, 0, len(defs))
		for n := range defs {
			names = append(names, n)
		}
		slices.Sort(names)
		for _, n := range names {
			d, e := defs[n], f.Lookup(s, n)
			switch {
			case e != nil && e.Hash == d.Hash:
				continue
			case e != nil && slices.Contains(e.Rejected, d.Hash):
				fmt.Fprintf(c.stdout, "%s/%s: rejected %s (hidden)\n", s, n, d.Hash)
				continue
			}
			changed = true
			var old []byte
			what := "new tool"
			if e != nil && e.Hash != "" {
				old, what = e.Definition, "changed, pinned "+e.Hash
			}
			fmt.Fprintf(c.stdout, "%s/%s: %s; live %s\n", s, n, what, d.Hash)
			for _, l := range pins.Diff(old, d.Canonical) {
				fmt.Fprintf(c.stdout, "  %s %s\n", l.Op, l.Text)
			}
			fmt.Fprintf(c.stdout, "  approve: pallasgw pins approve --config %s --hash %s %s %s\n", c.cfg.File, d.Hash, s, n)
		}
	}
	if !changed {
		fmt.Fprintln(c.stdout, "every live definition matches its pin")
	}
	return changed, nil
}

// review approves or rejects server's tool as the server defines it now;
// with want set, only if that is the definition reviewed.
func (c *command) review(approve bool, server, tool, want string) error {
	if _, ok := c.cfg.MCP.Servers[server]; !ok {
		return fmt.Errorf("server %q is not in the config", server)
	}
	defs, err := c.live(server)
	if err != nil {
		return err
	}
	d, ok := defs[tool]
	if !ok {
		return fmt.Errorf("server %q lists no tool %q", server, tool)
	}
	if want != "" && want != d.Hash {
		return fmt.Errorf("%s/%s: the live definition is %s, not the %s reviewed; run pallasgw pins diff again", server, tool, d.Hash, want)
	}
	if err := pins.Review(c.cfg.PinsPath, server, d, approve); err != nil {
		return err
	}
	verb := "approved"
	if !approve {
		verb = "rejected"
	}
	fmt.Fprintf(c.stdout, "%s/%s: %s %s in %s (a running gateway applies it at its next reload)\n", server, tool, verb, d.Hash, c.cfg.PinsPath)
	return nil
}

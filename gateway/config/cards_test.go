package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func writeFiles(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, body := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func TestAgentCards(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("CARD_MODEL", "playback")
	writeFiles(t, dir, map[string]string{
		"gw.yaml": "name: t\nagent_cards: [cards]\nagents:\n  main: {kind: chain, sequence: [writer, reviewer]}\n",
		"cards/writer.md": "---\ndescription: Writes drafts\nmodel: ${CARD_MODEL}\nparams: {playback: [hi], temperature: 0.3}\nmax_iterations: 4\n---\n\n" +
			"You write.\n\nWell.\n",
		"cards/review-card.md": "---\nname: reviewer\nkind: evaluator_optimizer\ngenerator: writer\nevaluator: writer\nmax_refinements: 0\n---\n",
		"cards/notes.txt":      "not a card",
	})
	c, err := Load(filepath.Join(dir, "gw.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	w, r := c.Agents["writer"], c.Agents["reviewer"]
	if w == nil || r == nil || len(c.Agents) != 3 {
		t.Fatalf("agents %v", c.Agents)
	}
	if w.Instruction != "You write.\n\nWell." || w.Model != "playback" || w.MaxIterations != 4 || w.Title != "Writer" || w.Description != "Writes drafts" {
		t.Errorf("writer %+v", w)
	}
	if r.Kind != KindEvaluatorOptimizer || r.MaxRefinements != 0 || r.MinRating != "GOOD" {
		t.Errorf("reviewer %+v", r)
	}
	if abs, _ := filepath.Abs(filepath.Join(dir, "cards")); len(c.AgentCardDirs) != 1 || c.AgentCardDirs[0] != abs {
		t.Errorf("card dirs %v", c.AgentCardDirs)
	}
	// A card's edit changes the config hash.
	hash := c.Hash
	writeFiles(t, dir, map[string]string{"cards/writer.md": "---\nmodel: passthrough\n---\nChanged.\n"})
	c2, err := Load(filepath.Join(dir, "gw.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if c2.Hash == hash || c2.Agents["writer"].Instruction != "Changed." {
		t.Errorf("edited card: hash same %v, instruction %q", c2.Hash == hash, c2.Agents["writer"].Instruction)
	}
	// Both the instruction key and a body: refused.
	writeFiles(t, dir, map[string]string{"cards/writer.md": "---\nmodel: passthrough\ninstruction: one\n---\nTwo.\n"})
	_, err = Load(filepath.Join(dir, "gw.yaml"))
	if err == nil || !strings.Contains(err.Error(), "cards/writer.md:3: instruction: set either the instruction key or the body, not both") {
		t.Errorf("err = %v", err)
	}
}

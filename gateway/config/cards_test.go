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

// fast-agent's AgentCard names are accepted where they mean what a
// pallasgw key means; its names without a pallasgw meaning, and unknown
// keys, are errors with the card's file and line.
func TestAgentCardsFastAgentNames(t *testing.T) {
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{
		"gw.yaml": "name: t\nagent_cards: [cards]\nmcp:\n  servers:\n    time: {url: \"http://127.0.0.1:1/mcp\"}\n    github: {url: \"http://127.0.0.1:2/mcp\"}\n",
		"cards/sizer.md": "---\ntype: agent\nschema_version: 1\ndefault: true\nuse_history: true\nservers: [time, github]\n" +
			"tools:\n  github: [search_*]\nrequest_params: {maxTokens: 512, temperature: 0.2, stopSequences: [END], max_iterations: 5}\n---\nEstimate sizes.\n",
		"cards/plan.md":  "---\ntype: iterative_planner\nagents: [sizer]\nplan_iterations: 4\nmodel: passthrough\n---\n",
		"cards/flow.md":  "---\ntype: chain\nsequence: [sizer]\n---\n",
		"cards/eo.md":    "---\ntype: evaluator_optimizer\ngenerator: sizer\nevaluator: sizer\nmin_rating: EXCELLENT\nmax_refinements: 1\n---\n",
		"cards/full.md":  "---\ntype: orchestrator\nagents: [sizer]\nplan_type: full\nmodel: passthrough\n---\n",
		"cards/fan.md":   "---\ntype: parallel\nfan_out: [sizer]\nfan_in: sizer\n---\n",
		"cards/route.md": "---\ntype: router\nagents: [sizer, fan]\nmodel: passthrough\n---\n",
	})
	c, err := Load(filepath.Join(dir, "gw.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	s := c.Agents["sizer"]
	if s.Kind != KindLLM || s.MaxIterations != 5 || s.Params["max_tokens"] != 512 || s.Params["temperature"] != 0.2 {
		t.Errorf("sizer %+v params %v", s, s.Params)
	}
	if got := strings.Join(s.Tools.Allow, ","); got != "github__search_*,time__*" {
		t.Errorf("sizer tools.allow %q, want github__search_*,time__* (a server not listed keeps its tools)", got)
	}
	if p := c.Agents["plan"]; p.Kind != KindOrchestrator || p.Plan != PlanIterative || p.MaxIterations != 4 {
		t.Errorf("plan %+v", p)
	}
	for name, kind := range map[string]string{"flow": KindChain, "eo": KindEvaluatorOptimizer, "full": KindOrchestrator, "fan": KindParallel, "route": KindRouter} {
		if c.Agents[name].Kind != kind {
			t.Errorf("%s kind %q, want %q", name, c.Agents[name].Kind, kind)
		}
	}
	if c.Agents["eo"].MinRating != "EXCELLENT" || c.Agents["full"].Plan != PlanFull {
		t.Errorf("eo %+v full %+v", c.Agents["eo"], c.Agents["full"])
	}

	writeFiles(t, dir, map[string]string{
		"cards/plan.md":  "---\ntype: MAKER\nworker: sizer\n---\n",
		"cards/flow.md":  "---\ntype: chain\nsequence: [sizer]\nhuman_input: true\ncolour: red\n---\n",
		"cards/eo.md":    "---\ntype: agent\nkind: llm\n---\n",
		"cards/full.md":  "---\nrequest_params: {maxTokens: 5, wobble: 1}\n---\n",
		"cards/route.md": "---\ntype: agent\nrequest_params: {temperature: 9}\n---\n",
	})
	_, err = Load(filepath.Join(dir, "gw.yaml"))
	for _, want := range []string{
		`cards/plan.md:2: agents.plan.type: fast-agent card type "MAKER" has no pallasgw kind`,
		`cards/flow.md:4: agents.flow.human_input: fast-agent key with no pallasgw equivalent (pallasgw agents do not ask a human)`,
		`cards/eo.md:2: agents.eo.type: set either type (fast-agent) or kind, not both`,
		`cards/full.md:2: agents.full.request_params.wobble: unknown request parameter`,
	} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("missing %q in:\n%v", want, err)
		}
	}
	if strings.Contains(err.Error(), "type: unknown key") {
		t.Errorf("a fast-agent name reported twice:\n%v", err)
	}
	// Mapped values are validated like written ones, at the card's line.
	writeFiles(t, dir, map[string]string{
		"cards/plan.md": "---\nmodel: passthrough\n---\n", "cards/flow.md": "---\nmodel: passthrough\n---\n",
		"cards/eo.md": "---\nmodel: passthrough\n---\n", "cards/full.md": "---\nmodel: passthrough\n---\n",
	})
	_, err = Load(filepath.Join(dir, "gw.yaml"))
	if want := "cards/route.md:3: agents.route.params.temperature: 9 is out of range 0 to 2"; err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("missing %q in:\n%v", want, err)
	}
}

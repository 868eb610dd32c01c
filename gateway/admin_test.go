package gateway

import (
	"encoding/json"
	"net/http/httptest"
	"strings"
	"testing"
)

// /-/status shows the serving config's warnings.
func TestStatusShowsWarnings(t *testing.T) {
	g := newTestGateway(t, revertCfg+"policy:\n  callers:\n    bobb: {agents: [echo]}\n")
	rec := httptest.NewRecorder()
	g.statusHandler(rec, httptest.NewRequest("GET", "/-/status", nil))
	var st struct{ Warnings []string }
	if err := json.Unmarshal(rec.Body.Bytes(), &st); err != nil {
		t.Fatal(err)
	}
	if len(st.Warnings) != 1 || !strings.Contains(st.Warnings[0], `policy.callers.bobb: in auth mode passthrough a rule is named by the agent_id a toolbox caller sends, and no agent is a toolbox`) {
		t.Fatalf("warnings %q", st.Warnings)
	}
}

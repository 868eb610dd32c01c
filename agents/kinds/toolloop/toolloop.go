// Package toolloop is the llm kind of agent: the tool loop. A model is
// offered the tools of the agent's servers and its sub-agents, calls them
// (in parallel within a turn), and answers when it calls none
// (loop.go); the tools offered are built per caller (tools.go), searched
// for when there are many (search.go), or bound into one run_script
// (codemode.go); streamed text goes out as progress (textstream.go); a
// turn interrupted by an input-required round continues from its
// checkpoint (resume.go).
//
// It owns the loop, the toolset and the checkpoint. It registers the llm
// kind with the agents core (agents.Register) and reaches the gateway only
// through the agent's agents.Host: the model (the core's model selection),
// the downstream, the policy's parts, outbound headers. It does not serve
// HTTP or pick models itself.
package toolloop

import (
	"github.com/pallasgw/pallasgw/agents"
	"github.com/pallasgw/pallasgw/gateway/config"
)

func init() {
	agents.Register(config.KindLLM, func(h agents.Host) (agents.Kind, error) {
		r, err := newLLMRunner(&agent{agents.NewBase(h)})
		if err != nil {
			return nil, err
		}
		return h.SendMessage(r), nil
	})
}

// agent is an llm agent as its loop sees it.
type agent struct{ *agents.Base }

// Call, Turn and Reporter are the core's: a send_message call, its turn
// and its progress.
type (
	Call     = agents.Call
	Turn     = agents.Turn
	Reporter = agents.Reporter
)

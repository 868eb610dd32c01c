package proxy

import (
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/mark3labs/mcp-go/server"
)

// A name is marked registered only once mcp-go has it: ensureTool's fast
// path reads the mark without the lock, so a mark set before AddTools
// returned let a concurrent first call (right after a reload, under load)
// reach mcp-go's lookup and get "tool not found". Readers of the registry
// (as concurrent requests are) hold AddTools off its write lock, which is
// what widened that window.
func TestProxyRegisterBeforeMark(t *testing.T) {
	p, err := New(Deps{Agent: "px", Servers: []string{"files"}})
	if err != nil {
		t.Fatal(err)
	}
	p.Register(newProxyServer(p))
	done := make(chan struct{})
	defer close(done)
	for r := 0; r < 4; r++ {
		go func() {
			for {
				select {
				case <-done:
					return
				default:
					p.srv.ListTools()
				}
			}
		}()
	}
	var early atomic.Int64
	for i := 0; i < 300; i++ {
		name := fmt.Sprintf("t%d", i)
		stop := make(chan struct{})
		var wg sync.WaitGroup
		for w := 0; w < 4; w++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for {
					select {
					case <-stop:
						return
					default:
					}
					if _, ok := p.registered.Load(name); ok {
						if p.srv.GetTool(name) == nil {
							early.Add(1)
						}
						return
					}
					runtime.Gosched()
				}
			}()
		}
		p.registerTools([]string{name})
		close(stop)
		wg.Wait()
	}
	if n := early.Load(); n > 0 {
		t.Errorf("%d times a tool was marked registered before mcp-go had it", n)
	}
}

// newProxyServer is p's mcp-go server as a proxy agent's is built.
func newProxyServer(p *Proxy) *server.MCPServer {
	h := &server.Hooks{}
	return server.NewMCPServer("px", "1", append(p.ServerOptions(h), server.WithHooks(h))...)
}

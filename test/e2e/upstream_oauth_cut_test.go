//go:build e2e

package e2e

import (
	"io"
	"net"
	"strings"
	"sync"
	"testing"
	"time"
)

// tcpProxy forwards TCP connections to a target until cut: then it closes
// every connection it carries and closes each new one at once (the peer
// sees its connection reset or ended), until restored.
type tcpProxy struct {
	URL string // http://its address
	l   net.Listener
	wg  sync.WaitGroup // the accept loop and each connection's pipe

	mu     sync.Mutex
	target string
	cut    bool
	conns  map[net.Conn]bool
}

func startTCPProxy(t *testing.T) *tcpProxy {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &tcpProxy{URL: "http://" + l.Addr().String(), l: l, conns: map[net.Conn]bool{}}
	p.wg.Add(1)
	go p.accept()
	t.Cleanup(func() {
		_ = l.Close()
		p.setCut(true)
		p.wg.Wait()
	})
	return p
}

func (p *tcpProxy) to(target string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.target = target
}

func (p *tcpProxy) accept() {
	defer p.wg.Done()
	for {
		c, err := p.l.Accept()
		if err != nil {
			return
		}
		if !p.track(c) {
			_ = c.Close()
			continue
		}
		p.wg.Add(1)
		go p.pipe(c)
	}
}

// track records c, false while cut.
func (p *tcpProxy) track(c net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cut {
		return false
	}
	p.conns[c] = true
	return true
}

func (p *tcpProxy) forget(cs ...net.Conn) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range cs {
		_ = c.Close()
		delete(p.conns, c)
	}
}

func (p *tcpProxy) pipe(c net.Conn) {
	defer p.wg.Done()
	p.mu.Lock()
	target := p.target
	p.mu.Unlock()
	u, err := net.Dial("tcp", target)
	if err != nil {
		p.forget(c)
		return
	}
	if !p.track(u) {
		p.forget(c, u)
		return
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		_, _ = io.Copy(u, c)
		p.forget(c, u)
	}()
	_, _ = io.Copy(c, u)
	p.forget(c, u)
	<-done
}

// setCut cuts (every carried connection closed, new ones refused) or
// restores the proxy.
func (p *tcpProxy) setCut(cut bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cut = cut
	if cut {
		for c := range p.conns {
			_ = c.Close()
		}
	}
}

// TestUpstreamOAuthUnreachableAS: the authorization server unreachable
// when a connected caller's token needs renewal, by a real TCP cut between
// the gateway and Hydra's public port (Hydra's issuer is the proxy's
// address). The call fails with an error naming the server and its
// authorization server; nothing is lost (the connection stays stored and
// counted connected, nobody is asked to connect again); once the proxy is
// restored the next call renews the token and works.
func TestUpstreamOAuthUnreachableAS(t *testing.T) {
	for _, fast := range []string{"on", "off"} {
		t.Run("wire_fast_"+fast, func(t *testing.T) { upstreamOAuthUnreachableAS(t, fast) })
	}
}

func upstreamOAuthUnreachableAS(t *testing.T, wireFast string) {
	front := startTCPProxy(t)
	rig := startOAuthRig(t, "8s", front)
	aliceTok := "alice-" + randomHex(12)
	gw := startGateway(t, rig.config("e2e-oauth-cut", `public_url: "http://127.0.0.1:{{PORT}}"`, []string{"alice"}, `  desk: {kind: proxy, servers: [team]}`),
		"PALLASGW_WIRE_FAST="+wireFast, "ALICE_TOKEN="+aliceTok, "CREDENTIALS_KEY="+credentialsKey())
	desk := gw.Base + "/agents/desk/mcp"

	alice := openLegacy(t, desk, aliceTok, "2025-11-25")
	connectFromList(t, gw.Base, "alice", aliceTok)
	id, a, text := alice.whoami(t)
	if !id.Verified || id.Sub != "alice" {
		t.Fatalf("alice's call once connected: %+v (%+v %s)", id, a.Error, text)
	}
	first := id.Fingerprint

	// The cut: her calls go on with the token she has until it needs
	// renewal (the last quarter of its 8 s), then one fails.
	front.setCut(true)
	var failure string
	for deadline := time.Now().Add(40 * time.Second); failure == ""; {
		id, a, text = alice.whoami(t)
		switch {
		case a.Error != nil:
			failure = a.Error.Message
		case text != "":
			failure = text
		case id.Sub != "alice" || id.Fingerprint != first:
			t.Fatalf("alice's call during the cut: %+v", id)
		}
		if failure == "" && time.Now().After(deadline) {
			t.Fatal("no call failed within 40 s of an 8 s token while its authorization server was cut off")
		}
		if failure == "" {
			time.Sleep(250 * time.Millisecond) // polling the gateway, not waiting for it
		}
	}
	if !strings.Contains(failure, "server team") || !strings.Contains(failure, "cannot be reached") || !strings.Contains(failure, rig.hydra.Issuer) ||
		strings.Contains(failure, "/connect/") {
		t.Errorf("the failed call's error: %q, want one naming server team and its unreachable authorization server, without a connect link", failure)
	}
	if v, _ := gw.Metric(`pallasgw_upstream_token_refreshes_total{outcome="error",server="team"}`); v < 1 {
		t.Errorf("refresh errors counted: %v, want at least 1", v)
	}
	// Nothing is lost: the connection is stored and counted connected.
	if v, ok := gw.Metric(`pallasgw_upstream_connections{server="team",state="connected"}`); !ok || v != 1 {
		t.Errorf("pallasgw_upstream_connections{connected} during the cut = %v (%v), want 1", v, ok)
	}
	if v, _ := gw.Metric(`pallasgw_upstream_connections{server="team",state="failed"}`); v != 0 {
		t.Errorf("pallasgw_upstream_connections{failed} during the cut = %v, want 0", v)
	}

	// Restored: the next call renews and works, with a new token, and no
	// connect asked of alice.
	front.setCut(false)
	id, a, text = alice.whoami(t)
	if !id.Verified || id.Sub != "alice" || id.Fingerprint == first {
		t.Fatalf("alice's first call after the restore: %+v (%+v %s), want her renewed token", id, a.Error, text)
	}
	if v, _ := gw.Metric(`pallasgw_upstream_token_refreshes_total{outcome="ok",server="team"}`); v < 1 {
		t.Errorf("refreshes counted ok after the restore: %v, want at least 1", v)
	}
	if strings.Contains(gw.Logs(), aliceTok) {
		t.Error("the gateway's log holds alice's gateway token")
	}
}

//go:build !linux

package mcpclient

import "net"

// h1Usable reports whether the raw calls use h1Transport. The check of an
// idle connection by peeking (h1_peek_linux.go) is Linux only; without it a
// connection the server closed while idle would fail the request written to
// it, where net/http's reader goroutine notices the close. Elsewhere the raw
// calls use net/http's Transport.
const h1Usable = false

func aliveCheck(net.Conn) func() bool { return assumeAlive }

// Command pinserver is test/pinserver's dictionary over stdio, for the
// tool pin tests of a stdio downstream; PINSERVER_STATE names its state
// file (the edition of its lookup tool, shared with other processes).
package main

import (
	"fmt"
	"os"

	"github.com/mark3labs/mcp-go/server"

	"github.com/pallasgw/pallasgw/test/pinserver"
)

func main() {
	s := pinserver.New(os.Getenv("PINSERVER_STATE"))
	if err := server.ServeStdio(s.MCP); err != nil {
		fmt.Fprintln(os.Stderr, "pinserver:", err)
		os.Exit(1)
	}
}

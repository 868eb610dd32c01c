// Package probe records the stack at the entry of every function of the
// project's production code, in a build whose sources test/arch rewrote to
// call Enter first thing (arch.Overlay; `go build -overlay`): TestCallPath
// sees in it every call a tools/call makes, the ones that have returned
// before a stack could be taken at a write too. In the ordinary build
// nothing calls Enter. It imports only the runtime: every package of the
// project imports it in the rewritten build.
package probe

import (
	"runtime"
	"sync"
	"sync/atomic"
)

var (
	armed  atomic.Bool
	mu     sync.Mutex
	stacks [][]uintptr
)

// Enter records the caller's stack while armed.
func Enter() {
	if !armed.Load() {
		return
	}
	pcs := make([]uintptr, 128)
	for {
		n := runtime.Callers(2, pcs)
		if n < len(pcs) {
			pcs = pcs[:n]
			break
		}
		pcs = make([]uintptr, 2*len(pcs))
	}
	mu.Lock()
	stacks = append(stacks, pcs)
	mu.Unlock()
}

// Arm starts recording, from no stacks.
func Arm() {
	mu.Lock()
	stacks = nil
	mu.Unlock()
	armed.Store(true)
}

// Disarm stops recording and returns the stacks recorded since Arm
// (program counters, innermost first, as runtime.Callers gives them).
func Disarm() [][]uintptr {
	armed.Store(false)
	mu.Lock()
	defer mu.Unlock()
	s := stacks
	stacks = nil
	return s
}

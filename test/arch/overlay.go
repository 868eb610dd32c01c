package arch

import (
	"encoding/json"
	"fmt"
	"go/ast"
	"os"
	"path/filepath"
	"runtime"
	"sort"
)

// ProbePackage is the package the rewritten sources call at each
// function's entry.
const ProbePackage = Module + "/test/arch/probe"

// Overlay rewrites every production file of s so that each function and
// function literal calls probe.Enter first, into dir, and writes there the
// overlay file `go build -overlay` takes; it returns that file's path.
// Lines keep their numbers: the call goes after the body's opening brace,
// the import on the package clause's line, its use at the end.
func Overlay(s *Source, dir string) (string, error) {
	replace := map[string]string{}
	for i, p := range s.Packages {
		for j, f := range p.Files {
			var at []int
			ast.Inspect(f.AST, func(n ast.Node) bool {
				switch fn := n.(type) {
				case *ast.FuncDecl:
					if fn.Body != nil {
						at = append(at, s.Fset.Position(fn.Body.Lbrace).Offset+1)
					}
				case *ast.FuncLit:
					at = append(at, s.Fset.Position(fn.Body.Lbrace).Offset+1)
				}
				return true
			})
			sort.Ints(at)
			pkgEnd := s.Fset.Position(f.AST.Name.End()).Offset
			var out []byte
			last := 0
			emit := func(upto int, text string) {
				out = append(out, f.Text[last:upto]...)
				out = append(out, text...)
				last = upto
			}
			emit(pkgEnd, fmt.Sprintf("; import archprobe_ %q", ProbePackage))
			for _, off := range at {
				emit(off, " archprobe_.Enter();")
			}
			emit(len(f.Text), "\nvar _ = archprobe_.Enter\n")
			name := filepath.Join(dir, fmt.Sprintf("%03d_%03d_%s", i, j, filepath.Base(f.Rel)))
			if err := os.WriteFile(name, out, 0o600); err != nil {
				return "", err
			}
			replace[filepath.Join(s.Root, filepath.FromSlash(f.Rel))] = name
		}
	}
	b, err := json.Marshal(map[string]any{"Replace": replace})
	if err != nil {
		return "", err
	}
	path := filepath.Join(dir, "overlay.json")
	return path, os.WriteFile(path, b, 0o600)
}

// FromPCs is the stack runtime.Callers gave (innermost first), outermost
// frame first, inlined calls expanded.
func FromPCs(pcs []uintptr) Stack {
	var inner []Frame
	frames := runtime.CallersFrames(pcs)
	for {
		fr, more := frames.Next()
		if fr.Function != "" {
			inner = append(inner, Frame{Func: fr.Function, File: fr.File, Line: fr.Line})
		}
		if !more {
			break
		}
	}
	s := Stack{Frames: make([]Frame, 0, len(inner))}
	for i := len(inner) - 1; i >= 0; i-- {
		s.Frames = append(s.Frames, inner[i])
	}
	return s
}

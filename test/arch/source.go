package arch

import (
	"fmt"
	"go/ast"
	"go/build"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// Source is the project's production Go files, parsed: every package under
// the root but test/ and testdata, without its _test.go files.
type Source struct {
	Root     string
	Fset     *token.FileSet
	Packages []*Package // by import path

	external map[string]*Package // packages of other modules, loaded when a type of theirs is asked about
	names    map[string]string   // import path → package name
}

// Package is one parsed package.
type Package struct {
	Path  string // import path
	Rel   string // directory relative to the root, slash-separated ("" outside the module)
	Name  string
	Files []*File
	types map[string]ast.Expr // declared type names → their type expressions
}

// File is one parsed file with its text (for the source of expressions).
type File struct {
	Rel  string // path relative to the root, slash-separated
	AST  *ast.File
	Text []byte
}

// LoadSource parses every production package under root.
func LoadSource(root string) (*Source, error) {
	s := &Source{Root: root, Fset: token.NewFileSet(), external: map[string]*Package{}, names: map[string]string{}}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		rel = filepath.ToSlash(rel)
		if rel != "." && !Production(rel) {
			return filepath.SkipDir
		}
		if rel == "." {
			rel = ""
		}
		p, err := s.parseDir(path, rel)
		if err != nil || p == nil {
			return err
		}
		p.Path = Module
		if rel != "" {
			p.Path += "/" + rel
		}
		s.Packages = append(s.Packages, p)
		return nil
	})
	sort.Slice(s.Packages, func(i, j int) bool { return s.Packages[i].Path < s.Packages[j].Path })
	return s, err
}

// parseDir parses the non-test Go files of dir (nil: none).
func (s *Source) parseDir(dir, rel string) (*Package, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var p *Package
	for _, e := range ents {
		n := e.Name()
		if e.IsDir() || !strings.HasSuffix(n, ".go") || strings.HasSuffix(n, "_test.go") {
			continue
		}
		text, err := os.ReadFile(filepath.Join(dir, n))
		if err != nil {
			return nil, err
		}
		f, err := parser.ParseFile(s.Fset, filepath.Join(dir, n), text, parser.SkipObjectResolution)
		if err != nil {
			return nil, err
		}
		if p == nil {
			p = &Package{Rel: rel, Name: f.Name.Name, types: map[string]ast.Expr{}}
		}
		if f.Name.Name != p.Name { // a main package's `package foo_test`-like stray, or a tool file
			continue
		}
		fileRel := n
		if rel != "" {
			fileRel = rel + "/" + n
		}
		p.Files = append(p.Files, &File{Rel: fileRel, AST: f, Text: text})
		for _, d := range f.Decls {
			if gd, ok := d.(*ast.GenDecl); ok && gd.Tok == token.TYPE {
				for _, sp := range gd.Specs {
					ts := sp.(*ast.TypeSpec)
					p.types[ts.Name.Name] = ts.Type
				}
			}
		}
	}
	return p, nil
}

// pkg is the package of import path ip: the project's, or one of another
// module found as `go build` finds it (nil when it cannot be found).
func (s *Source) pkg(ip string) *Package {
	for _, p := range s.Packages {
		if p.Path == ip {
			return p
		}
	}
	if p, ok := s.external[ip]; ok {
		return p
	}
	s.external[ip] = nil
	bp, err := build.Import(ip, s.Root, 0)
	if err != nil {
		return nil
	}
	p, err := s.parseDir(bp.Dir, "")
	if err != nil || p == nil {
		return nil
	}
	p.Path = ip
	s.external[ip] = p
	return p
}

// imports maps the names a file's imports are used by to their paths; the
// names of other modules' packages are guessed from their paths unless
// exact is set.
func (s *Source) imports(f *ast.File, exact bool) map[string]string {
	m := map[string]string{}
	for _, im := range f.Imports {
		ip, _ := strconv.Unquote(im.Path.Value)
		switch {
		case im.Name != nil:
			m[im.Name.Name] = ip
		default:
			m[s.name(ip, exact)] = ip
		}
	}
	return m
}

// Imports is imports with guessed names: enough to tell the standard
// library's and the project's packages apart.
func (s *Source) Imports(f *ast.File) map[string]string { return s.imports(f, false) }

// name is the package name of import path ip: the standard library's
// and the project's as they are; another module's guessed from its path
// (a version suffix dropped) unless exact is set, which reads its files.
func (s *Source) name(ip string, exact bool) string {
	if n, ok := s.names[ip]; ok {
		return n
	}
	first, _, _ := strings.Cut(ip, "/")
	own := ip == Module || strings.HasPrefix(ip, Module+"/")
	if !own && strings.Contains(first, ".") && !exact {
		elems := strings.Split(ip, "/")
		n := elems[len(elems)-1]
		if len(elems) > 1 && len(n) > 1 && n[0] == 'v' && strings.Trim(n[1:], "0123456789") == "" {
			n = elems[len(elems)-2]
		}
		n, _, _ = strings.Cut(n, ".")
		return strings.TrimPrefix(n, "go-")
	}
	n := ip[strings.LastIndex(ip, "/")+1:]
	if own || exact {
		if p := s.pkg(ip); p != nil {
			n = p.Name
		}
	}
	s.names[ip] = n
	return n
}

// IsFunc reports whether the type expression e, written in file f of
// package p, is a function type: a func literal type, or a name declared
// as one (in p, or in the package a selector names, followed through
// named types and aliases).
func (s *Source) IsFunc(p *Package, f *ast.File, e ast.Expr) bool {
	for range 10 { // a chain of named types is short
		switch t := e.(type) {
		case *ast.FuncType:
			return true
		case *ast.ParenExpr:
			e = t.X
		case *ast.Ident:
			next, ok := p.types[t.Name]
			if !ok {
				return false // a predeclared type, or a type parameter
			}
			if f = p.fileDeclaring(t.Name); f == nil {
				return false
			}
			e = next
		case *ast.SelectorExpr:
			x, ok := t.X.(*ast.Ident)
			if !ok {
				return false
			}
			ip, ok := s.imports(f, false)[x.Name]
			if !ok {
				ip = s.imports(f, true)[x.Name]
			}
			q := s.pkg(ip)
			if q == nil {
				return false
			}
			next, ok := q.types[t.Sel.Name]
			if !ok {
				return false
			}
			// The next name is resolved in q's files: any of them holds
			// the imports a type declaration of q uses.
			p, f, e = q, q.fileDeclaring(t.Sel.Name), next
			if f == nil {
				return false
			}
		default:
			return false
		}
	}
	return false
}

// fileDeclaring is the file of p that declares type name.
func (p *Package) fileDeclaring(name string) *ast.File {
	for _, f := range p.Files {
		for _, d := range f.AST.Decls {
			if gd, ok := d.(*ast.GenDecl); ok && gd.Tok == token.TYPE {
				for _, sp := range gd.Specs {
					if sp.(*ast.TypeSpec).Name.Name == name {
						return f.AST
					}
				}
			}
		}
	}
	return nil
}

// Text is the source text of node n in file f.
func (s *Source) Text(f *File, n ast.Node) string {
	start, end := s.Fset.Position(n.Pos()).Offset, s.Fset.Position(n.End()).Offset
	if start < 0 || end > len(f.Text) || start > end {
		return ""
	}
	return string(f.Text[start:end])
}

// FuncName names a function declaration as a reader finds it:
// "(*Proxy).forward", "Serve".
func FuncName(fd *ast.FuncDecl) string {
	if fd.Recv == nil || len(fd.Recv.List) == 0 {
		return fd.Name.Name
	}
	return fmt.Sprintf("(%s).%s", recvType(fd.Recv.List[0].Type), fd.Name.Name)
}

func recvType(e ast.Expr) string {
	switch t := e.(type) {
	case *ast.StarExpr:
		return "*" + recvType(t.X)
	case *ast.IndexExpr:
		return recvType(t.X)
	case *ast.IndexListExpr:
		return recvType(t.X)
	case *ast.Ident:
		return t.Name
	}
	return "?"
}

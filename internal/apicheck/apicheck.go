// Package apicheck lists the exported API of the library's public packages
// in the spirit of Go's own api/*.txt files: one line per exported
// identifier with its signature, sorted. The list is checked in as api/v1.txt
// and TestAPIFile fails when the code and the file differ; regenerate it with
// `make api` and review the diff with its CHANGELOG line.
//
// It reads the source with go/parser alone, so it covers nested modules
// (sqsotel) without loading them.
package apicheck

import (
	"bytes"
	"fmt"
	"go/ast"
	"go/parser"
	"go/printer"
	"go/token"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
)

// Module is the root module's import path.
const Module = "github.com/sqsworker/sqsworker"

// Line is one exported identifier of a public package.
type Line struct {
	Pkg  string // import path
	Text string // e.g. "func New(string, Options) (*Worker, error)"
	// Counted reports whether the line is a top-level exported name or a
	// method of an exported type (the unit of the exported-name budget);
	// struct fields and interface methods are listed but not counted.
	Counted bool
}

func (l Line) String() string { return "pkg " + l.Pkg + ", " + l.Text }

// Public reports whether the package directory rel (slash-separated,
// relative to the repository root) is part of the public API: not internal,
// not a command, not an example, not a benchmark or end-to-end module.
func Public(rel string) bool {
	if rel == "." || rel == "" {
		return false
	}
	for _, part := range strings.Split(rel, "/") {
		switch part {
		case "internal", "harness", "testdata", "examples", "cmd", "bench", "e2e", "localstack", "docs", "api":
			return false
		}
		if strings.HasPrefix(part, ".") || strings.HasPrefix(part, "_") {
			return false
		}
	}
	return true
}

// Collect returns the sorted API lines of every public package under root.
func Collect(root string) ([]Line, error) {
	var dirs []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() {
			return nil
		}
		rel, _ := filepath.Rel(root, p)
		rel = filepath.ToSlash(rel)
		if rel != "." && (strings.HasPrefix(d.Name(), ".") || d.Name() == "node_modules") {
			return filepath.SkipDir
		}
		if Public(rel) {
			dirs = append(dirs, rel)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	var lines []Line
	for _, rel := range dirs {
		ls, err := collectDir(root, rel)
		if err != nil {
			return nil, err
		}
		lines = append(lines, ls...)
	}
	sort.Slice(lines, func(i, j int) bool { return lines[i].String() < lines[j].String() })
	return lines, nil
}

func collectDir(root, rel string) ([]Line, error) {
	fset := token.NewFileSet()
	dir := filepath.Join(root, filepath.FromSlash(rel))
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var files []*ast.File
	for _, e := range entries {
		n := e.Name()
		if e.IsDir() || !strings.HasSuffix(n, ".go") || strings.HasSuffix(n, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, filepath.Join(dir, n), nil, parser.SkipObjectResolution)
		if err != nil {
			return nil, err
		}
		if f.Name.Name == "main" {
			return nil, nil
		}
		if ignored(f) {
			continue
		}
		files = append(files, f)
	}
	if len(files) == 0 {
		return nil, nil
	}
	pkg := importPath(root, rel)
	p := &lister{fset: fset, pkg: pkg}
	for _, f := range files {
		p.file(f)
	}
	return p.lines, nil
}

// ignored reports files excluded from every build (//go:build ignore).
func ignored(f *ast.File) bool {
	for _, cg := range f.Comments {
		if cg.Pos() > f.Package {
			break
		}
		for _, c := range cg.List {
			if strings.HasPrefix(c.Text, "//go:build") && strings.Contains(c.Text, "ignore") {
				return true
			}
		}
	}
	return false
}

// importPath is the package's import path, found from the nearest go.mod.
func importPath(root, rel string) string {
	d := rel
	for {
		mod := filepath.Join(root, filepath.FromSlash(d), "go.mod")
		if d == "." {
			mod = filepath.Join(root, "go.mod")
		}
		if b, err := os.ReadFile(mod); err == nil {
			for _, line := range strings.Split(string(b), "\n") {
				if strings.HasPrefix(line, "module ") {
					m := strings.TrimSpace(strings.TrimPrefix(line, "module "))
					sub := strings.TrimPrefix(strings.TrimPrefix(rel, d), "/")
					if d == "." {
						sub = rel
					}
					if sub == "" {
						return m
					}
					return m + "/" + sub
				}
			}
		}
		if d == "." {
			return Module + "/" + rel
		}
		d = path.Dir(d)
	}
}

type lister struct {
	fset  *token.FileSet
	pkg   string
	lines []Line
}

func (p *lister) add(counted bool, format string, args ...any) {
	p.lines = append(p.lines, Line{Pkg: p.pkg, Text: fmt.Sprintf(format, args...), Counted: counted})
}

func (p *lister) expr(e ast.Expr) string {
	var b bytes.Buffer
	_ = printer.Fprint(&b, p.fset, stripNames(e))
	return strings.Join(strings.Fields(b.String()), " ")
}

func (p *lister) file(f *ast.File) {
	for _, decl := range f.Decls {
		switch d := decl.(type) {
		case *ast.FuncDecl:
			if !d.Name.IsExported() {
				continue
			}
			sig := strings.TrimPrefix(p.expr(d.Type), "func")
			if d.Recv == nil {
				p.add(true, "func %s%s", d.Name.Name, sig)
				continue
			}
			recv := d.Recv.List[0].Type
			base := recv
			if s, ok := base.(*ast.StarExpr); ok {
				base = s.X
			}
			switch b := base.(type) {
			case *ast.IndexExpr:
				base = b.X
			case *ast.IndexListExpr:
				base = b.X
			}
			id, ok := base.(*ast.Ident)
			if !ok || !id.IsExported() {
				continue
			}
			p.add(true, "method (%s) %s%s", p.expr(recv), d.Name.Name, sig)
		case *ast.GenDecl:
			for _, spec := range d.Specs {
				switch s := spec.(type) {
				case *ast.TypeSpec:
					p.typeSpec(s)
				case *ast.ValueSpec:
					kind := d.Tok.String()
					for _, n := range s.Names {
						if !n.IsExported() {
							continue
						}
						if s.Type != nil {
							p.add(true, "%s %s %s", kind, n.Name, p.expr(s.Type))
						} else {
							p.add(true, "%s %s", kind, n.Name)
						}
					}
				}
			}
		}
	}
}

func (p *lister) typeSpec(s *ast.TypeSpec) {
	if !s.Name.IsExported() {
		return
	}
	name := s.Name.Name
	if s.TypeParams != nil {
		name += p.expr(&ast.IndexListExpr{X: ast.NewIdent(""), Indices: fieldTypes(s.TypeParams)})
	}
	alias := ""
	if s.Assign.IsValid() {
		alias = "= "
	}
	switch t := s.Type.(type) {
	case *ast.StructType:
		p.add(true, "type %s %sstruct", name, alias)
		for _, f := range t.Fields.List {
			if len(f.Names) == 0 {
				p.add(false, "type %s struct, embedded %s", name, p.expr(f.Type))
				continue
			}
			for _, n := range f.Names {
				if n.IsExported() {
					p.add(false, "type %s struct, %s %s", name, n.Name, p.expr(f.Type))
				}
			}
		}
	case *ast.InterfaceType:
		p.add(true, "type %s %sinterface", name, alias)
		for _, f := range t.Methods.List {
			if len(f.Names) == 0 {
				p.add(false, "type %s interface, embedded %s", name, p.expr(f.Type))
				continue
			}
			for _, n := range f.Names {
				if n.IsExported() {
					p.add(false, "type %s interface, %s%s", name, n.Name, strings.TrimPrefix(p.expr(f.Type), "func"))
				}
			}
		}
	default:
		p.add(true, "type %s %s%s", name, alias, p.expr(s.Type))
	}
}

func fieldTypes(fl *ast.FieldList) []ast.Expr {
	var out []ast.Expr
	for _, f := range fl.List {
		n := len(f.Names)
		if n == 0 {
			n = 1
		}
		for range n {
			out = append(out, f.Type)
		}
	}
	return out
}

// stripNames returns e with parameter and result names removed from every
// function type, so renaming a parameter is not an API change.
func stripNames(e ast.Expr) ast.Expr {
	ft, ok := e.(*ast.FuncType)
	if !ok {
		return e
	}
	strip := func(fl *ast.FieldList) *ast.FieldList {
		if fl == nil {
			return nil
		}
		out := &ast.FieldList{}
		for _, f := range fl.List {
			n := len(f.Names)
			if n == 0 {
				n = 1
			}
			for range n {
				out.List = append(out.List, &ast.Field{Type: stripNames(f.Type)})
			}
		}
		return out
	}
	return &ast.FuncType{TypeParams: ft.TypeParams, Params: strip(ft.Params), Results: strip(ft.Results)}
}

// Counts returns the number of counted names per package.
func Counts(lines []Line) map[string]int {
	m := map[string]int{}
	for _, l := range lines {
		if l.Counted {
			m[l.Pkg] += 0
			m[l.Pkg]++
		}
	}
	return m
}

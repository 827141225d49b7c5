package apicheck

import (
	"bufio"
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite api/v1.txt from the code")

const root = "../.."

func apiFile() string { return filepath.Join(root, "api", "v1.txt") }

// TestAPIFile fails when the exported API differs from api/v1.txt. A change
// to the API changes the file in the same commit (make api), with a
// CHANGELOG line.
func TestAPIFile(t *testing.T) {
	lines, err := Collect(root)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for _, l := range lines {
		b.WriteString(l.String())
		b.WriteByte('\n')
	}
	if *update {
		if err := os.WriteFile(apiFile(), []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(apiFile())
	if err != nil {
		t.Fatalf("%v: run `make api` to write the API file", err)
	}
	got := b.String()
	if got == string(want) {
		return
	}
	have := set(string(want))
	now := set(got)
	var added, removed []string
	for l := range now {
		if !have[l] {
			added = append(added, "+ "+l)
		}
	}
	for l := range have {
		if !now[l] {
			removed = append(removed, "- "+l)
		}
	}
	sort.Strings(added)
	sort.Strings(removed)
	t.Errorf("the exported API differs from api/v1.txt (%d added, %d removed); if the change is meant, "+
		"run `make api`, commit the file and add a CHANGELOG line (a removed name says what replaces it):\n%s",
		len(added), len(removed), strings.Join(append(removed, added...), "\n"))
}

func set(s string) map[string]bool {
	m := map[string]bool{}
	sc := bufio.NewScanner(strings.NewReader(s))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		if sc.Text() != "" {
			m[sc.Text()] = true
		}
	}
	return m
}

type listed struct {
	ImportPath string
	Dir        string
	Imports    []string
	GoFiles    []string
}

func goList(t *testing.T, dir string) []listed {
	t.Helper()
	cmd := exec.Command("go", "list", "-json", "./...")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOWORK=off")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list in %s: %v\n%s", dir, err, stderr.String())
	}
	var pkgs []listed
	dec := json.NewDecoder(bytes.NewReader(out))
	for dec.More() {
		var p listed
		if err := dec.Decode(&p); err != nil {
			t.Fatal(err)
		}
		pkgs = append(pkgs, p)
	}
	return pkgs
}

func rel(p string) string {
	if p == Module {
		return "."
	}
	return strings.TrimPrefix(p, Module+"/")
}

func within(p, dir string) bool { return p == dir || strings.HasPrefix(p, dir+"/") }

// TestLayering checks that dependencies point one way (docs/ARCHITECTURE.md):
//   - a runtime package under internal/ imports no public package of the
//     library except the leaves retry and queueref, which themselves import
//     no public package (only internal leaves such as sqslimit);
//   - nothing of the library (public packages, internal packages, the CLI,
//     the examples) imports the test harness outside its tests.
func TestLayering(t *testing.T) {
	leaves := map[string]bool{"retry": true, "queueref": true}
	pkgs := goList(t, root)
	byPath := map[string]listed{}
	for _, p := range pkgs {
		byPath[rel(p.ImportPath)] = p
	}
	public := func(r string) bool { return Public(r) }
	var faults []string
	for r := range leaves {
		for _, imp := range byPath[r].Imports {
			if ir := rel(imp); strings.HasPrefix(imp, Module) && public(ir) {
				faults = append(faults, fmt.Sprintf("leaf %s imports public package %s: it is no longer a leaf", r, ir))
			}
		}
	}
	for r, p := range byPath {
		for _, imp := range p.Imports {
			if !strings.HasPrefix(imp, Module) {
				continue
			}
			ir := rel(imp)
			if within(ir, "harness") && !within(r, "harness") {
				faults = append(faults, fmt.Sprintf("%s imports the test harness %s (only tests may)", r, ir))
			}
			if within(r, "internal") && !within(r, "internal/apicheck") && public(ir) && !leaves[ir] {
				faults = append(faults, fmt.Sprintf("internal runtime package %s imports public package %s, which sits above it", r, ir))
			}
		}
	}
	sort.Strings(faults)
	for _, f := range faults {
		t.Error(f)
	}
}

// TestNoAnyHooks fails on a package-level variable of type any (or
// interface{}) in the library: packages talk through typed interfaces, never
// through hooks set at start-up and type-asserted later, where a signature
// drift compiles and then panics.
func TestNoAnyHooks(t *testing.T) {
	for _, p := range goList(t, root) {
		r := rel(p.ImportPath)
		if within(r, "harness") || within(r, "examples") {
			continue
		}
		fset := token.NewFileSet()
		for _, f := range p.GoFiles {
			file, err := parser.ParseFile(fset, filepath.Join(p.Dir, f), nil, parser.SkipObjectResolution)
			if err != nil {
				t.Fatal(err)
			}
			for _, d := range file.Decls {
				g, ok := d.(*ast.GenDecl)
				if !ok || g.Tok != token.VAR {
					continue
				}
				for _, s := range g.Specs {
					vs := s.(*ast.ValueSpec)
					if isAny(vs.Type) {
						for _, n := range vs.Names {
							t.Errorf("%s: package-level variable %s has type any: use a typed interface", fset.Position(n.Pos()), n.Name)
						}
					}
				}
			}
		}
	}
}

func isAny(e ast.Expr) bool {
	switch x := e.(type) {
	case *ast.Ident:
		return x.Name == "any"
	case *ast.InterfaceType:
		return len(x.Methods.List) == 0
	}
	return false
}

// budget is the exported-name budget of the v1 API: the total and the
// packages whose surface grew fastest (counted as in Counts: top-level
// exported names and the methods of exported types). A capability that needs
// more names than its package has left is a design question, not a bump.
var budget = map[string]int{
	"":       400,
	"dlq":    60,
	"retry":  40,
	"fanout": 45,
	"fleet":  45,
	"worker": 55,
}

func TestExportedNameBudget(t *testing.T) {
	lines, err := Collect(root)
	if err != nil {
		t.Fatal(err)
	}
	counts := Counts(lines)
	total := 0
	for p, n := range counts {
		total += n
		if b, ok := budget[rel(p)]; ok && n > b {
			t.Errorf("package %s exports %d names, over its budget of %d", rel(p), n, b)
		}
	}
	if total > budget[""] {
		t.Errorf("the library exports %d names, over the budget of %d", total, budget[""])
	}
	t.Logf("exported names: %d", total)
}

// TestArchitectureLayers checks the layer table of docs/ARCHITECTURE.md
// (its ```layers block, top to bottom) against the imports: every package
// of the library is in one layer and imports only packages of lower layers.
func TestArchitectureLayers(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join(root, "docs", "ARCHITECTURE.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, block, ok := strings.Cut(string(doc), "```layers\n")
	if !ok {
		t.Fatal("docs/ARCHITECTURE.md has no ```layers block")
	}
	block, _, _ = strings.Cut(block, "```")
	lines := strings.Split(strings.TrimSpace(block), "\n")
	layer := map[string]int{}
	for i, l := range lines {
		for _, p := range strings.Fields(l) {
			if _, dup := layer[p]; dup {
				t.Errorf("docs/ARCHITECTURE.md lists %s twice", p)
			}
			layer[p] = len(lines) - i // the bottom layer is 1
		}
	}
	seen := map[string]bool{}
	for _, p := range goList(t, root) {
		r := rel(p.ImportPath)
		if within(r, "harness") || within(r, "examples") || within(r, "cmd") || within(r, "localstack") || within(r, "internal/apicheck") {
			continue
		}
		seen[r] = true
		l, ok := layer[r]
		if !ok {
			t.Errorf("package %s is in no layer of docs/ARCHITECTURE.md", r)
			continue
		}
		for _, imp := range p.Imports {
			if !strings.HasPrefix(imp, Module+"/") {
				continue
			}
			ir := rel(imp)
			if il, ok := layer[ir]; ok && il >= l {
				t.Errorf("%s imports %s, which is not in a layer below it (docs/ARCHITECTURE.md)", r, ir)
			}
		}
	}
	for p := range layer {
		if !seen[p] {
			t.Errorf("docs/ARCHITECTURE.md lists %s, which is not a package of the library", p)
		}
	}
}

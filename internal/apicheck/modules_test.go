package apicheck

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// nestedModules are the modules inside the repository besides the library.
var nestedModules = []string{"sqsotel", "console/e2e", "bench"}

// workVersion is the library version that go.work ties to this checkout.
func workVersion(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, "go.work"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^replace ` + regexp.QuoteMeta(Module) + ` (v\S+) => \./\s*$`).FindSubmatch(b)
	if m == nil {
		t.Fatalf("go.work has no `replace %s vX.Y.Z => ./` line", Module)
	}
	return string(m[1])
}

// TestNoReplaceInGoMod checks that no go.mod of the repository needs a
// replace (a consumer would not inherit it) and that every nested module
// requires the library at the version go.work ties to this checkout.
func TestNoReplaceInGoMod(t *testing.T) {
	v := workVersion(t)
	for _, m := range append([]string{"."}, nestedModules...) {
		b, err := os.ReadFile(filepath.Join(root, m, "go.mod"))
		if err != nil {
			t.Fatal(err)
		}
		if regexp.MustCompile(`(?m)^\s*replace\b`).Match(b) {
			t.Errorf("%s/go.mod has a replace directive; a module outside this repository would not inherit it (the workspace, go.work, ties the modules together)", m)
		}
		if m == "." {
			continue
		}
		req := regexp.MustCompile(`(?m)^\s*(?:require\s+)?` + regexp.QuoteMeta(Module) + ` (v\S+)`).FindSubmatch(b)
		if req == nil {
			t.Errorf("%s/go.mod does not require %s", m, Module)
		} else if string(req[1]) != v {
			t.Errorf("%s/go.mod requires %s %s, go.work ties %s (release them together: docs/RELEASING.md)", m, Module, req[1], v)
		}
	}
}

// TestOutsideConsumerBuilds builds a module outside the repository that
// requires sqsotel and the library with ordinary require lines, through a
// go.work file, as a team that vendors a release candidate would.
func TestOutsideConsumerBuilds(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a module with the go command (-short)")
	}
	v := workVersion(t)
	abs, err := filepath.Abs(root)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	consumer := filepath.Join(dir, "consumer")
	if err := os.MkdirAll(consumer, 0o755); err != nil {
		t.Fatal(err)
	}
	write := func(name, content string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("consumer/go.mod", "module example.com/consumer\n\ngo 1.26.0\n\nrequire (\n\t"+
		Module+" "+v+"\n\t"+Module+"/sqsotel "+v+"\n)\n")
	write("consumer/main.go", `package main

import (
	"fmt"

	"github.com/sqsworker/sqsworker/sqsotel"
	"github.com/sqsworker/sqsworker/worker"
)

func main() {
	inst, err := sqsotel.New()
	var h worker.HandlerFunc
	fmt.Println(inst != nil, err, h == nil)
}
`)
	write("go.work", "go 1.26.0\n\nuse (\n\t./consumer\n\t"+abs+"\n\t"+filepath.Join(abs, "sqsotel")+"\n)\n\nreplace (\n\t"+
		Module+" "+v+" => "+abs+"\n\t"+Module+"/sqsotel "+v+" => "+filepath.Join(abs, "sqsotel")+"\n)\n")
	cmd := exec.Command("go", "build", "-o", os.DevNull, ".")
	cmd.Dir = consumer
	cmd.Env = append(os.Environ(), "GOWORK="+filepath.Join(dir, "go.work"), "GOFLAGS=-mod=readonly")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("a consumer outside the repository does not build: %v\n%s", err, strings.TrimSpace(string(out)))
	}
}

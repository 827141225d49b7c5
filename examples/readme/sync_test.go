package readme

import (
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"github.com/sqsworker/sqsworker/worker"
)

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// fencedBlocks returns the contents of md's code blocks fenced as ```lang.
func fencedBlocks(md, lang string) []string {
	var blocks []string
	rest := md
	for {
		_, after, ok := strings.Cut(rest, "\n```"+lang+"\n")
		if !ok {
			return blocks
		}
		body, tail, ok := strings.Cut(after, "\n```\n")
		if !ok {
			return blocks
		}
		blocks = append(blocks, body+"\n")
		rest = "\n" + tail
	}
}

// section returns the README section under the heading, up to the next
// heading of the same level.
func section(md, heading string) string {
	_, after, ok := strings.Cut(md, "\n"+heading+"\n")
	if !ok {
		return ""
	}
	body, _, _ := strings.Cut(after, "\n## ")
	return body
}

// TestReadmeGoBlocksAreCompiled checks that every Go block of the docs
// (README.md, CONTRIBUTING.md, docs/**/*.md) appears verbatim in this
// package's Go files, where it compiles (and the test snippet runs), or is
// the whole of examples/quickstart/main.go, the quick start's program, so
// the docs' code cannot drift from the API. Blocks that use the
// OpenTelemetry module (sqsotel) compile in that module instead, in
// sqsotel/readme_test.go: the library's module cannot import it.
func TestReadmeGoBlocksAreCompiled(t *testing.T) {
	src := readFile(t, "../../sqsotel/readme_test.go")
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		src += readFile(t, f)
	}
	quickstart := readFile(t, "../quickstart/main.go")
	total := 0
	for _, doc := range docFiles(t) {
		blocks := fencedBlocks(readFile(t, filepath.Join(repoRoot, doc)), "go")
		total += len(blocks)
		for i, b := range blocks {
			if b != quickstart && !strings.Contains(src, b) {
				first, _, _ := strings.Cut(b, "\n")
				t.Errorf("%s Go block %d (%q) does not appear verbatim in examples/readme (or sqsotel/readme_test.go for OpenTelemetry code); copy it there so it compiles", doc, i+1, first)
			}
		}
	}
	if total < 10 {
		t.Fatalf("found %d Go blocks in the docs; expected the quick start, the guides' and the references' snippets", total)
	}
}

// TestReadmeConfigurationReference checks that the options reference
// (docs/reference/options.md) has a row for every worker.Options field and
// none for a field that is gone.
func TestReadmeConfigurationReference(t *testing.T) {
	ref := section(readFile(t, "../../docs/reference/options.md"), "## worker.Options")
	if ref == "" {
		t.Fatal(`docs/reference/options.md has no "## worker.Options" section`)
	}
	fields := map[string]bool{}
	for f := range reflect.TypeFor[worker.Options]().Fields() {
		if f.IsExported() {
			fields[f.Name] = true
			if !strings.Contains(ref, "\n| `"+f.Name+"` |") {
				t.Errorf("docs/reference/options.md has no row for worker.Options.%s; add it with its default from worker/options.go", f.Name)
			}
		}
	}
	for _, m := range regexp.MustCompile("\n\\| `([A-Za-z]+)` \\|").FindAllStringSubmatch(ref, -1) {
		if !fields[m[1]] {
			t.Errorf("docs/reference/options.md has a row for %s, which worker.Options does not have", m[1])
		}
	}
}

// TestReadmeListsEveryExample checks that each example program is linked
// from the README's examples table.
func TestReadmeListsEveryExample(t *testing.T) {
	md := readFile(t, "../../README.md")
	dirs, err := os.ReadDir("..")
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range dirs {
		if !d.IsDir() {
			continue
		}
		if _, err := os.Stat(filepath.Join("..", d.Name(), "main.go")); err != nil {
			continue
		}
		if !strings.Contains(md, "(examples/"+d.Name()+")") {
			t.Errorf("README.md does not link examples/%s; add it to the examples table", d.Name())
		}
	}
}

// TestReadmeIsShort keeps the README a page a newcomer reads in ten
// minutes: what it is, install, the quick start, setup, the commands and
// the guides. Everything else goes to docs/ and CONTRIBUTING.md.
func TestReadmeIsShort(t *testing.T) {
	if n := strings.Count(readFile(t, "../../README.md"), "\n"); n > 400 {
		t.Errorf("README.md has %d lines, over 400: move detail to docs/guides, docs/reference or CONTRIBUTING.md", n)
	}
}

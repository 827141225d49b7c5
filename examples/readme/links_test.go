package readme

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"unicode"
)

// repoRoot is the repository, seen from this package.
const repoRoot = "../.."

// docFiles lists the documentation whose links are checked: README.md,
// CONTRIBUTING.md and every Markdown file under docs/, as paths relative
// to the repository.
func docFiles(t *testing.T) []string {
	t.Helper()
	files := []string{"README.md", "CONTRIBUTING.md"}
	err := filepath.WalkDir(filepath.Join(repoRoot, "docs"), func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && strings.HasSuffix(path, ".md") {
			rel, err := filepath.Rel(repoRoot, path)
			if err != nil {
				return err
			}
			files = append(files, filepath.ToSlash(rel))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

var (
	// inlineLink matches the target of [text](target) and ![alt](target),
	// with an optional title.
	inlineLink = regexp.MustCompile(`\]\(([^()\s]*)(?:\s+"[^"]*")?\)`)
	// refLink matches a reference definition: [label]: target.
	refLink = regexp.MustCompile(`(?m)^\s{0,3}\[[^\]]+\]:\s*(\S+)`)
	// codeSpan matches inline code.
	codeSpan = regexp.MustCompile("`[^`\n]*`")
	// htmlAnchor matches <a name="x"> and id="x".
	htmlAnchor = regexp.MustCompile(`(?:name|id)="([^"]+)"`)
	// mdLinkText matches [text](target) in a heading, to keep the text.
	mdLinkText = regexp.MustCompile(`!?\[([^\]]*)\]\([^)]*\)`)
	htmlTag    = regexp.MustCompile(`<[^>]+>`)
)

// prose returns md without its fenced code blocks (each line of one
// becomes empty, so line numbers stay), and reports for each line whether
// it was prose.
func prose(md string) []string {
	lines := strings.Split(md, "\n")
	fence := ""
	for i, l := range lines {
		trimmed := strings.TrimLeft(l, " ")
		if fence == "" {
			if strings.HasPrefix(trimmed, "```") || strings.HasPrefix(trimmed, "~~~") {
				fence = trimmed[:3]
				lines[i] = ""
			}
			continue
		}
		if strings.HasPrefix(trimmed, fence) {
			fence = ""
		}
		lines[i] = ""
	}
	return lines
}

// slug is GitHub's anchor for a heading's text: the rendered text in lower
// case, with everything but letters, marks, digits, '-', '_' and spaces
// dropped, and each space made a '-'.
func slug(heading string) string {
	s := mdLinkText.ReplaceAllString(heading, "$1")
	s = htmlTag.ReplaceAllString(s, "")
	s = strings.NewReplacer("`", "", "*", "").Replace(s)
	var b strings.Builder
	for _, r := range strings.ToLower(strings.TrimSpace(s)) {
		switch {
		case unicode.IsLetter(r), unicode.IsMark(r), unicode.IsDigit(r), r == '-', r == '_':
			b.WriteRune(r)
		case r == ' ':
			b.WriteByte('-')
		}
	}
	return b.String()
}

// anchors returns the anchors GitHub gives a Markdown file: one per
// heading (a repeated slug gets -1, -2, …), and the names and ids of its
// HTML elements.
func anchors(md string) map[string]bool {
	out := map[string]bool{}
	seen := map[string]int{}
	for _, l := range prose(md) {
		t := strings.TrimLeft(l, " ")
		if len(l)-len(t) > 3 || !strings.HasPrefix(t, "#") {
			continue
		}
		level := len(t) - len(strings.TrimLeft(t, "#"))
		text := t[level:]
		if level > 6 || (text != "" && text[0] != ' ' && text[0] != '\t') {
			continue
		}
		text = strings.TrimRight(strings.TrimSpace(text), "#")
		s := slug(text)
		if n := seen[s]; n > 0 {
			out[fmt.Sprintf("%s-%d", s, n)] = true
		} else {
			out[s] = true
		}
		seen[s]++
	}
	for _, m := range htmlAnchor.FindAllStringSubmatch(md, -1) {
		out[m[1]] = true
	}
	return out
}

// TestSlug pins GitHub's slug rules on headings of these docs.
func TestSlug(t *testing.T) {
	for heading, want := range map[string]string{
		"Quick start":                          "quick-start",
		"Creating queues: `sqsworker setup`":   "creating-queues-sqsworker-setup",
		`What "never lost" means`:              "what-never-lost-means",
		"A worker's role":                      "a-workers-role",
		"worker.Options":                       "workeroptions",
		"The two commands, and `make console`": "the-two-commands-and-make-console",
		"console: a 10,000-message dead-letter queue at 15 ms per call":            "console-a-10000-message-dead-letter-queue-at-15-ms-per-call",
		"Fleet controls: limits, caps, pause and a breaker shared by every worker": "fleet-controls-limits-caps-pause-and-a-breaker-shared-by-every-worker",
		"Using [LocalStack](https://localstack.cloud) instead":                     "using-localstack-instead",
		"snake_case and  two spaces":                                               "snake_case-and--two-spaces",
	} {
		if got := slug(heading); got != want {
			t.Errorf("slug(%q) = %q, want %q", heading, got, want)
		}
	}
	a := anchors("# Title\n## Notes\n```\n## Not a heading\n```\n## Notes\n<a id=\"custom\"></a>\n")
	for _, want := range []string{"title", "notes", "notes-1", "custom"} {
		if !a[want] {
			t.Errorf("anchors lack %q: %v", want, a)
		}
	}
	if a["not-a-heading"] {
		t.Error("a heading in a code block counted")
	}
}

// TestDocLinksResolve checks every relative link and #anchor of README.md,
// CONTRIBUTING.md and docs/**/*.md: the file or directory it names exists,
// and its anchor is a heading (by GitHub's slug rules) or an HTML anchor
// of the Markdown file it points to.
func TestDocLinksResolve(t *testing.T) {
	cache := map[string]map[string]bool{}
	anchorsOf := func(path string) (map[string]bool, error) {
		if a, ok := cache[path]; ok {
			return a, nil
		}
		b, err := os.ReadFile(filepath.Join(repoRoot, path))
		if err != nil {
			return nil, err
		}
		cache[path] = anchors(string(b))
		return cache[path], nil
	}
	checked := 0
	for _, file := range docFiles(t) {
		b, err := os.ReadFile(filepath.Join(repoRoot, file))
		if err != nil {
			t.Fatal(err)
		}
		for n, line := range prose(string(b)) {
			line = codeSpan.ReplaceAllString(line, "")
			var targets []string
			for _, m := range inlineLink.FindAllStringSubmatch(line, -1) {
				targets = append(targets, m[1])
			}
			for _, m := range refLink.FindAllStringSubmatch(line, -1) {
				targets = append(targets, m[1])
			}
			for _, target := range targets {
				if target == "" || strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
					continue
				}
				checked++
				where := fmt.Sprintf("%s:%d: link %q", file, n+1, target)
				path, anchor, _ := strings.Cut(target, "#")
				dest := file
				if path != "" {
					if strings.HasPrefix(path, "/") {
						dest = strings.TrimPrefix(path, "/")
					} else {
						dest = filepath.ToSlash(filepath.Join(filepath.Dir(file), path))
					}
					if dest == ".." || strings.HasPrefix(dest, "../") {
						t.Errorf("%s: leaves the repository", where)
						continue
					}
					if _, err := os.Stat(filepath.Join(repoRoot, dest)); err != nil {
						t.Errorf("%s: %s does not exist", where, dest)
						continue
					}
				}
				if anchor == "" {
					continue
				}
				if !strings.HasSuffix(dest, ".md") {
					t.Errorf("%s: an anchor into %s, which is not Markdown", where, dest)
					continue
				}
				a, err := anchorsOf(dest)
				if err != nil {
					t.Errorf("%s: %v", where, err)
					continue
				}
				if !a[anchor] {
					t.Errorf("%s: %s has no heading or anchor %q", where, dest, anchor)
				}
			}
		}
	}
	if checked < 50 {
		t.Errorf("checked only %d links; is the link pattern still right?", checked)
	}
}

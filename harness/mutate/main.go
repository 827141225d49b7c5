// Command mutate is the mutation check behind `make mutate`: it applies a
// recorded list of one-line changes (mutations) to the code that decides a
// job's fate — the settlement engine and its snooze relay, the batch
// layers, fleet, the heartbeat, the dead-letter tools and the worker's
// shutdown, the Lambda adapter — runs the tests that should notice each
// one, and fails if any change survives (its tests still pass).
//
// Each mutation is one that would lose or mishandle a job while every test
// passed, until a test was written for it (issue 37 found three). The list
// is in mutations.go; add one with the test that kills it.
//
// The source tree is never written: each mutant is compiled through `go
// test -overlay`, which replaces the one file for that build only, so
// there is nothing to restore, an interrupted run leaves no change behind,
// and editing meanwhile is safe. Before the mutants, each test set runs
// once unchanged: a mutation counts as killed only by tests that pass
// without it. A mutation whose original text is not found exactly once (the
// code moved on) or whose mutant does not compile is an error, not a kill.
//
// Usage (from the repository; the tests need the local AWS emulators, which
// `make mutate` provides):
//
//	go run ./harness/mutate [-run REGEXP] [-list] [-p N] [-timeout D]
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"time"
)

// Mutation is one recorded one-line change and the tests that must notice it.
type Mutation struct {
	// Name identifies the mutation (-run selects by it).
	Name string
	// File is the file to change, relative to the repository root.
	File string
	// Anchor, when set, is text that occurs once in File; Original is
	// looked for after it (for text that also occurs elsewhere).
	Anchor string
	// Original is the exact text changed; it must occur exactly once in
	// File (after Anchor, the first occurrence is taken).
	Original string
	// Mutant replaces it.
	Mutant string
	// Packages are the test packages to run ("./dlq/").
	Packages []string
	// Run is the -run pattern selecting the tests.
	Run string
	// Why says what the mutant would do to a job.
	Why string
}

// outcome is what became of one mutation.
type outcome struct {
	m      Mutation
	status string // "killed", "SURVIVED", "ERROR"
	detail string
	took   time.Duration
}

func main() {
	runPat := flag.String("run", "", "run only the mutations whose name matches this regular expression")
	list := flag.Bool("list", false, "list the mutations and exit")
	parallel := flag.Int("p", 1, "how many mutants to test at once")
	timeout := flag.Duration("timeout", 10*time.Minute, "the longest one go test run may take")
	flag.Parse()

	root, err := repoRoot()
	if err != nil {
		fail(err)
	}
	ms := mutations
	if *runPat != "" {
		re, err := regexp.Compile(*runPat)
		if err != nil {
			fail(err)
		}
		ms = nil
		for _, m := range mutations {
			if re.MatchString(m.Name) {
				ms = append(ms, m)
			}
		}
	}
	if *list {
		for _, m := range ms {
			fmt.Printf("%-36s %s\n%-36s %s\n", m.Name, m.File, "", m.Why)
		}
		return
	}
	if len(ms) == 0 {
		fail(errors.New("no mutation selected"))
	}
	tmp, err := os.MkdirTemp("", "sqsworker-mutate-")
	if err != nil {
		fail(err)
	}
	defer os.RemoveAll(tmp)

	// Every mutant first: a stale list fails before any test runs.
	mutants := make([]string, len(ms))
	for i, m := range ms {
		if mutants[i], err = writeMutant(root, tmp, i, m); err != nil {
			fail(fmt.Errorf("mutation %s: %w", m.Name, err))
		}
	}

	fmt.Printf("mutate: %d mutations; first the tests that must kill them, unchanged\n", len(ms))
	baseline := map[string]bool{}
	for _, m := range ms {
		key := testKey(m)
		if baseline[key] {
			continue
		}
		baseline[key] = true
		start := time.Now()
		out, err := goTest(root, m, "", *timeout)
		if err != nil {
			fmt.Print(out)
			fail(fmt.Errorf("the tests of mutation %s fail without it (%s): fix them first", m.Name, key))
		}
		fmt.Printf("  ok    %-60s %s\n", key, time.Since(start).Round(100*time.Millisecond))
	}

	results := make([]outcome, len(ms))
	var wg sync.WaitGroup
	sem := make(chan struct{}, max(*parallel, 1))
	for i, m := range ms {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			results[i] = try(root, tmp, i, m, mutants[i], *timeout)
			r := results[i]
			fmt.Printf("  %-8s %-36s %s\n", r.status, m.Name, r.took.Round(100*time.Millisecond))
		})
	}
	wg.Wait()

	killed, bad := 0, 0
	for _, r := range results {
		if r.status == "killed" {
			killed++
			continue
		}
		bad++
		fmt.Printf("\n%s: %s (%s)\n  %s\n  %q → %q\n  tests: go test -run '%s' %s\n%s\n",
			r.status, r.m.Name, r.m.File, r.m.Why, r.m.Original, r.m.Mutant, r.m.Run, strings.Join(r.m.Packages, " "), indent(r.detail))
	}
	fmt.Printf("\nmutate: %d mutations, %d killed, %d survived or broken\n", len(results), killed, bad)
	if bad > 0 {
		os.Exit(1)
	}
}

// try tests one mutant.
func try(root, tmp string, i int, m Mutation, mutant string, timeout time.Duration) outcome {
	start := time.Now()
	overlay := filepath.Join(tmp, fmt.Sprintf("overlay-%d.json", i))
	b, _ := json.Marshal(map[string]map[string]string{"Replace": {filepath.Join(root, m.File): mutant}})
	if err := os.WriteFile(overlay, b, 0o600); err != nil {
		return outcome{m: m, status: "ERROR", detail: err.Error(), took: time.Since(start)}
	}
	out, err := goTest(root, m, overlay, timeout)
	r := outcome{m: m, took: time.Since(start), detail: out}
	switch {
	case err == nil:
		r.status = "SURVIVED"
	case strings.Contains(out, "[build failed]") || strings.Contains(out, "[setup failed]"):
		r.status = "ERROR"
		r.detail = "the mutant does not compile:\n" + out
	case errors.Is(err, context.DeadlineExceeded):
		r.status = "ERROR"
		r.detail = "the tests did not end within the timeout:\n" + out
	default:
		r.status = "killed"
	}
	return r
}

// writeMutant writes the mutated copy of m.File and returns its path.
func writeMutant(root, tmp string, i int, m Mutation) (string, error) {
	src, err := os.ReadFile(filepath.Join(root, m.File))
	if err != nil {
		return "", err
	}
	s := string(src)
	from := 0
	if m.Anchor != "" {
		if n := strings.Count(s, m.Anchor); n != 1 {
			return "", fmt.Errorf("its anchor %q occurs %d times in %s; want once (update the list in harness/mutate)", m.Anchor, n, m.File)
		}
		from = strings.Index(s, m.Anchor)
	} else if n := strings.Count(s, m.Original); n != 1 {
		return "", fmt.Errorf("its original text %q occurs %d times in %s; want once (give an Anchor, or update the list in harness/mutate)", m.Original, n, m.File)
	}
	k := strings.Index(s[from:], m.Original)
	if k < 0 {
		return "", fmt.Errorf("its original text %q is not in %s (after its anchor); update the list in harness/mutate", m.Original, m.File)
	}
	k += from
	if strings.Contains(m.Original, "\n") || strings.Contains(m.Mutant, "\n") {
		return "", errors.New("a mutation changes one line")
	}
	out := s[:k] + m.Mutant + s[k+len(m.Original):]
	path := filepath.Join(tmp, fmt.Sprintf("mutant-%d-%s", i, filepath.Base(m.File)))
	return path, os.WriteFile(path, []byte(out), 0o600)
}

// goTest runs m's tests, through overlay when it is set.
func goTest(root string, m Mutation, overlay string, timeout time.Duration) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	args := []string{"test", "-count=1", "-run", m.Run}
	if overlay != "" {
		args = append(args, "-overlay", overlay)
	}
	args = append(args, m.Packages...)
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Dir = root
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	if ctx.Err() != nil {
		err = ctx.Err()
	}
	return out.String(), err
}

func testKey(m Mutation) string {
	return strings.Join(m.Packages, " ") + " -run " + m.Run
}

// repoRoot is the directory of the root module's go.mod, from the working
// directory up.
func repoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		b, err := os.ReadFile(filepath.Join(dir, "go.mod"))
		if err == nil && bytes.HasPrefix(b, []byte("module github.com/sqsworker/sqsworker\n")) {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("mutate: run it inside the sqsworker repository")
		}
		dir = parent
	}
}

func indent(s string) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > 40 {
		lines = append(lines[:20], append([]string{"  …"}, lines[len(lines)-20:]...)...)
	}
	return "    " + strings.Join(lines, "\n    ")
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "mutate:", err)
	os.Exit(2)
}

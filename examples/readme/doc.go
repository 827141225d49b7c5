// Package readme holds, as compiled Go, every Go snippet of the project's
// documentation — README.md, CONTRIBUTING.md and docs/**/*.md — and tests
// that keep the two in step: each ```go block must appear verbatim in this
// package's files (or be examples/quickstart/main.go, the quick start's
// program), the options reference must name every worker.Options field,
// every example program under examples/ must be listed in the README, and
// every relative link and #anchor must resolve by GitHub's rules.
//
// Run its tests with the rest of the examples:
//
//	go test ./examples/readme/
//
// The snippets that need AWS only compile here; the sqstest one also runs.
package readme

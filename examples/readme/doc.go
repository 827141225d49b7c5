// Package readme holds, as compiled Go, every Go snippet of the project's
// README.md, and tests that keep the two in step: each ```go block of the
// README must appear verbatim in readme_test.go, the configuration
// reference must name every worker.Options field, and every example program
// under examples/ must be listed.
//
// Run its tests with the rest of the examples:
//
//	go test ./examples/readme/
//
// The snippets that need AWS only compile here; the sqstest one also runs.
package readme

// Package exampleutil holds the plumbing the example programs share
// (signals, AWS configuration, exit codes, waiting, cleaning up), so that
// each example's main.go shows only what it is about.
package exampleutil

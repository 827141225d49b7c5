// Command quickstart is the README's quick start: a complete sqsworker
// service in one file. It consumes a queue (-queue, default "orders") with
// a typed JSON handler, serves /livez, /readyz and /debug/sqsworker/stats
// (-addr, default 127.0.0.1:8080), and stops gracefully on Ctrl-C or
// SIGTERM. With -send N it first enqueues N orders and one without an id,
// which the handler sends to the dead-letter queue with its reason.
//
// Against the local emulators, from the repository:
//
//	eval "$(bash localstack/start.sh)"
//	go run ./cmd/sqsworker setup orders
//	go run ./examples/quickstart -send 5
//
// The README shows main.go verbatim; a test fails when the two differ.
package main

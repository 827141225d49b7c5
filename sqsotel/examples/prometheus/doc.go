// Command prometheus serves a worker's metrics on /metrics for Prometheus,
// with its health on /livez and /readyz and its Stats on
// /debug/sqsworker/stats (the input of `sqsworker cost`).
//
// It uses OTel's Prometheus exporter (go.opentelemetry.io/otel/exporters/prometheus)
// rather than a client_golang collector of its own: sqsotel's instruments
// are OTel instruments, so one set of them feeds OTLP and Prometheus alike,
// and the exporter applies Prometheus's naming rules (units as suffixes,
// _total on counters). The exporter registers on a client_golang registry,
// which promhttp serves.
//
// It creates a queue pair under a fresh name, handles 50 jobs (one in ten
// fails once, one is poison), scrapes its own /metrics with Prometheus's
// parser, prints a few series, and deletes the queues. Run it against the
// emulators from the repository's root:
//
//	bash localstack/with-aws.sh sh -c 'cd sqsotel && go run ./examples/prometheus -hold 1m'
//
// and, meanwhile, curl http://127.0.0.1:9464/metrics.
package main

package contract

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/sqsworker/sqsworker/worker"
	"github.com/sqsworker/sqsworker/worker/sqslambda"
)

var quiet = slog.New(slog.DiscardHandler)

// Runtimes returns the runtimes the suite holds to the contract: the
// worker and the Lambda adapter. Both are built and driven through their
// public API only.
func Runtimes() []Runtime { return []Runtime{Worker(), Lambda()} }

// Worker is the worker runtime: worker.New and Run with one poller (so a
// fault on "the next receive" hits the receive that gets the messages) and
// no prefetch; ten handlers, so a scenario's messages are received, and
// settled, together.
func Worker() Runtime {
	return Runtime{Name: "worker", New: func(t *testing.T, s Setup) func(context.Context) error {
		w, err := worker.New(s.Client, s.Source, s.Handler, func(o *worker.Options) {
			o.Logger = quiet
			o.Concurrency = 10
			o.MaxPrefetch = -1
			o.Pollers = 1
			o.WaitTime = 2 * time.Second
			o.RetryPolicy = s.Policy
			o.HandlerTimeout = HandlerTimeout
			o.CallTimeout = CallTimeout
			o.ShutdownTimeout = 5 * time.Second
			o.OnSettled = s.OnSettled
		})
		if err != nil {
			t.Fatalf("worker.New: %v", err)
		}
		return w.Run
	}}
}

// lambdaDeadlineMargin is the Lambda adapter's Options.DeadlineMargin: the
// function timeout is HandlerTimeout plus it, so handlers get as long as
// the worker's.
const lambdaDeadlineMargin = 2 * time.Second

// Lambda is the Lambda adapter (sqslambda.Handler with Options.Client)
// driven as Lambda's event source mapping drives a function, by
// sqslambda.RunLocal with ReportBatchItemFailures: receive, build the
// event, call Handle, delete the records not reported in
// BatchItemFailures.
func Lambda() Runtime {
	return Runtime{Name: "lambda", New: func(t *testing.T, s Setup) func(context.Context) error {
		h, err := sqslambda.New(s.Handler, func(o *sqslambda.Options) {
			o.Logger = quiet
			o.Client = s.Client
			o.RetryPolicy = s.Policy
			o.CallTimeout = CallTimeout
			o.DeadlineMargin = lambdaDeadlineMargin
			o.OnSettled = s.OnSettled
		})
		if err != nil {
			t.Fatalf("sqslambda.New: %v", err)
		}
		return func(ctx context.Context) error {
			return sqslambda.RunLocal(ctx, s.Client, s.Source, h.Handle, func(o *sqslambda.LocalOptions) {
				o.Logger = quiet
				o.ReportBatchItemFailures = true
				o.WaitTime = 2 * time.Second
				o.FunctionTimeout = HandlerTimeout + lambdaDeadlineMargin
			})
		}
	}}
}

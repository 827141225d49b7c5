package main

import (
	"context"
	"time"

	"github.com/sqsworker/sqsworker/harness/chaos"
)

// run runs the process in the configuration's mode: a worker (with an
// idempotency Guard in chaos.ModeIdempotency), or a Lambda execution
// environment (chaos.ModeLambda).
func run(ctx context.Context, cfg chaos.WorkerConfig, name string, stoppedAt func() time.Time) error {
	if cfg.Mode == chaos.ModeLambda {
		return chaos.RunLambda(ctx, cfg, name, stoppedAt)
	}
	return chaos.RunWorker(ctx, cfg, name, stoppedAt)
}

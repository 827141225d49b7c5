package main

import (
	"fmt"
	"os"

	"github.com/sqsworker/sqsworker/harness/chaos"
)

// runProducer runs a producer process (chaos.RunProducer) until its share
// is sent or SIGTERM/SIGINT, and returns the exit code.
func runProducer(config, name string) int {
	cfg, err := chaos.LoadProducerConfig(config)
	if err != nil {
		fmt.Fprintln(os.Stderr, "chaosworker:", err)
		return 2
	}
	ctx, stoppedAt := untilSignal()
	if err := chaos.RunProducer(ctx, cfg, name, stoppedAt); err != nil {
		fmt.Fprintln(os.Stderr, "chaosworker:", err)
		return 1
	}
	return 0
}

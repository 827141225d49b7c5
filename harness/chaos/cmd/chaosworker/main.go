// Command chaosworker is one worker process of the chaos suite (package
// harness/chaos): it runs a worker on the chaos queue through the fault
// proxy until SIGTERM or SIGINT, recording every run, success and
// settlement in its files. The orchestrator builds and starts it; it is
// not meant to be run by hand. With -produce it is a producer process of
// the producer variant instead (produce.go).
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/sqsworker/sqsworker/harness/chaos"
)

func main() {
	config := flag.String("config", "", "the worker configuration file (JSON) the orchestrator wrote")
	name := flag.String("name", "", "this process's name (w1, w2, …): its files and its SDK AppID")
	produce := flag.Bool("produce", false, "be a producer process of the producer variant (-config is then a producer configuration)")
	flag.Parse()
	if *config == "" || *name == "" {
		fmt.Fprintln(os.Stderr, "usage: chaosworker -config FILE -name NAME")
		os.Exit(2)
	}
	if *produce {
		os.Exit(runProducer(*config, *name))
	}
	cfg, err := chaos.LoadWorkerConfig(*config)
	if err != nil {
		fmt.Fprintln(os.Stderr, "chaosworker:", err)
		os.Exit(2)
	}
	ctx, stoppedAt := untilSignal()
	if err := run(ctx, cfg, *name, stoppedAt); err != nil {
		fmt.Fprintln(os.Stderr, "chaosworker:", err)
		os.Exit(1)
	}
}

// untilSignal returns a context that ends at SIGTERM or SIGINT, and a
// function that says when the signal came (zero before).
func untilSignal() (context.Context, func() time.Time) {
	ctx, cancel := context.WithCancel(context.Background())
	var stopped atomic.Int64
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
	go func() {
		<-sig
		stopped.Store(time.Now().UnixNano())
		cancel()
	}()
	return ctx, func() time.Time {
		if n := stopped.Load(); n != 0 {
			return time.Unix(0, n)
		}
		return time.Time{}
	}
}

// Command chaos runs the chaos suite (package harness/chaos) against the
// SQS endpoint in AWS_ENDPOINT_URL_SQS (or AWS_ENDPOINT_URL), a loopback
// emulator; `make chaos` starts one and runs this command. It prints the
// report, writes it (text and JSON) to the run's directory, and exits 1
// when the run broke an acceptance criterion.
//
//	make chaos VARIANT=graceful
//	go run ./harness/chaos/cmd/chaos -variant scale -seed 7 -out /tmp/scale
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/sqsworker/sqsworker/harness/chaos"
)

func main() {
	variant := flag.String("variant", "chaos", "the variant: "+strings.Join(chaos.Variants(), ", ")+", or all (every one but scale and soak)")
	jobs := flag.Int("jobs", 0, "jobs to send (0: the variant's)")
	workers := flag.Int("workers", 0, "worker processes at once (0: the variant's)")
	seed := flag.Uint64("seed", 1, "seed of the jobs, faults and kills")
	duration := flag.Duration("duration", 0, "longest chaos phase (0: the variant's)")
	out := flag.String("out", "", "directory for the run's files and report (default: a new temporary directory; with -variant all, one subdirectory per variant)")
	race := flag.Bool("race", false, "build the worker program with the race detector")
	proxyLog := flag.Bool("proxy-log", true, "write the proxy's log of every request to proxy.jsonl")
	noFaults := flag.Bool("no-faults", false, "inject no faults (a baseline)")
	noKills := flag.Bool("no-kills", false, "stop no worker before the end (a baseline)")
	again := flag.String("reconcile", "", "reconcile the finished run in this directory again and print its report (no emulator needed)")
	flag.Parse()

	if *again != "" {
		report, err := chaos.Rereport(*again)
		if err != nil {
			fatal(err.Error())
		}
		fmt.Print(report.Text())
		if !report.Passed() {
			os.Exit(1)
		}
		return
	}

	endpoint := os.Getenv("AWS_ENDPOINT_URL_SQS")
	if endpoint == "" {
		endpoint = os.Getenv("AWS_ENDPOINT_URL")
	}
	if endpoint == "" {
		fatal("no SQS endpoint: set AWS_ENDPOINT_URL_SQS to a local emulator, or run `make chaos`, which starts one")
	}
	names := []string{*variant}
	if *variant == "all" {
		names = nil
		for _, n := range chaos.Variants() {
			if n != "scale" && n != "soak" {
				names = append(names, n)
			}
		}
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	failed := false
	for _, name := range names {
		cfg, err := chaos.Variant(name)
		if err != nil {
			fatal(err.Error())
		}
		cfg.SQS, cfg.Region, cfg.Seed, cfg.Race, cfg.ProxyLog, cfg.Log = endpoint, os.Getenv("AWS_REGION"), *seed, *race, *proxyLog, os.Stderr
		cfg.DynamoDB = os.Getenv("AWS_ENDPOINT_URL_DYNAMODB")
		if cfg.DynamoDB == "" {
			cfg.DynamoDB = os.Getenv("AWS_ENDPOINT_URL")
		}
		if *noFaults {
			cfg.DynamoFaults = nil
		}
		if *jobs > 0 {
			cfg.Jobs = *jobs
		}
		if *workers > 0 {
			cfg.Workers = *workers
		}
		if *noFaults {
			cfg.Faults = nil
		}
		if *noKills {
			cfg.Kills = chaos.Kills{}
		}
		if *duration > 0 {
			cfg.Duration = *duration
		}
		if *out != "" {
			cfg.Dir = *out
			if len(names) > 1 {
				cfg.Dir = filepath.Join(*out, name)
			}
		}
		begin := time.Now()
		report, err := chaos.Run(ctx, cfg)
		if err != nil {
			fatal(err.Error())
		}
		fmt.Print(report.Text())
		fmt.Printf("(%s run took %v; files in %s)\n\n", name, time.Since(begin).Round(time.Second), report.Config.Dir)
		failed = failed || !report.Passed()
	}
	if failed {
		os.Exit(1)
	}
}

func fatal(msg string) {
	fmt.Fprintln(os.Stderr, "chaos:", msg)
	os.Exit(2)
}

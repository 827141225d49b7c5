package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	cfg, err := config.LoadDefaultConfig(ctx)
	if err != nil {
		fmt.Fprintln(os.Stderr, "demo: loading the AWS configuration:", err)
		os.Exit(1)
	}
	if cfg.Region == "" {
		fmt.Fprintln(os.Stderr, "demo: no AWS region is configured; run `make demo`, or set AWS_REGION (and AWS_ENDPOINT_URL for LocalStack)")
		os.Exit(1)
	}
	_, err = run(ctx, os.Stdout, sqs.NewFromConfig(cfg), defaultSettings())
	switch {
	case err == nil:
	case errors.Is(err, context.Canceled):
		fmt.Fprintln(os.Stderr, "demo: interrupted")
		os.Exit(130)
	default:
		fmt.Fprintln(os.Stderr, "demo:", err)
		os.Exit(1)
	}
}

package exampleutil

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/smithy-go/logging"
)

// Main runs an example: it loads the AWS configuration from the
// environment (AWS_ENDPOINT_URL_SQS etc. point it at LocalStack or the
// emulators), calls body with a context cancelled on SIGINT or SIGTERM, and
// exits 1 with the error prefixed by name when body fails.
func Main(name string, body func(ctx context.Context, cfg aws.Config) error) {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	cfg, err := config.LoadDefaultConfig(ctx)
	if err == nil {
		err = body(ctx, cfg)
	}
	stop()
	if err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", name, err)
		os.Exit(1)
	}
}

// WaitFor polls cond until it holds, ctx ends, or timeout passes.
func WaitFor(ctx context.Context, timeout time.Duration, cond func() bool) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	for !cond() {
		select {
		case <-ctx.Done():
			return context.Cause(ctx)
		case <-time.After(20 * time.Millisecond):
		}
	}
	return nil
}

// QueueDeleter is the SQS call DeleteQueues makes.
type QueueDeleter interface {
	DeleteQueue(ctx context.Context, params *sqs.DeleteQueueInput, optFns ...func(*sqs.Options)) (*sqs.DeleteQueueOutput, error)
}

// DeleteQueues removes an example's queues, even after an interrupt.
func DeleteQueues(ctx context.Context, client QueueDeleter, urls ...string) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	for _, u := range urls {
		_, _ = client.DeleteQueue(ctx, &sqs.DeleteQueueInput{QueueUrl: aws.String(u)})
	}
}

// LockedWriter returns a writer that serialises writes to w, for examples
// whose handlers print while the main flow does.
func LockedWriter(w io.Writer) io.Writer { return &lockedWriter{w: w} }

type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// TableDeleter is the DynamoDB call DeleteTable makes.
type TableDeleter interface {
	DeleteTable(ctx context.Context, params *dynamodb.DeleteTableInput, optFns ...func(*dynamodb.Options)) (*dynamodb.DeleteTableOutput, error)
}

// DeleteTable removes an example's DynamoDB table, even after an interrupt.
func DeleteTable(ctx context.Context, client TableDeleter, table string) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	_, _ = client.DeleteTable(ctx, &dynamodb.DeleteTableInput{TableName: aws.String(table)})
}

// DynamoDB returns a DynamoDB client for cfg with QuietChecksums.
func DynamoDB(cfg aws.Config) *dynamodb.Client { return dynamodb.NewFromConfig(cfg, QuietChecksums) }

// QuietChecksums has the client's logger drop one spurious SDK warning:
// DynamoDB Local sends no CRC32 header with error responses, so the SDK
// warns about every failed condition (a duplicate, a refused send;
// aws/aws-sdk-go-v2#3545). Everything else is logged.
func QuietChecksums(o *dynamodb.Options) {
	next := o.Logger
	o.Logger = logging.LoggerFunc(func(c logging.Classification, format string, v ...any) {
		if !strings.HasPrefix(format, "failed to close HTTP response body") && next != nil {
			next.Logf(c, format, v...)
		}
	})
}

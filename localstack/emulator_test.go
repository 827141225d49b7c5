package localstack

import (
	"context"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/sqsworker/sqsworker/dlq"
	"github.com/sqsworker/sqsworker/harness/testenv"
	"github.com/sqsworker/sqsworker/worker"
)

// TestSecondRunGetsEveryJob is issue 18's fourth report, against the
// emulator as start.sh launches it: a program runs a worker, stops (which
// aborts its long polls), and a second run of it gets jobs sent meanwhile.
// On bare fauxqs the first run's abandoned polls took 10 of 47 jobs, which
// then stayed invisible for the 30 s visibility timeout; the launcher ends
// such polls, so the second run gets all of them at once.
func TestSecondRunGetsEveryJob(t *testing.T) {
	c := testenv.SQS(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	setup, err := dlq.Setup(ctx, c, dlq.SetupOptions{Name: testenv.UniqueName("rerun")})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		for _, u := range []string{setup.QueueURL, setup.DLQURL} {
			_, _ = c.DeleteQueue(context.Background(), &sqs.DeleteQueueInput{QueueUrl: aws.String(u)})
		}
	}()
	var done atomic.Int64
	runFor := func(until func() bool, limit time.Duration) {
		t.Helper()
		w, err := worker.New(c, setup.QueueURL, worker.HandlerFunc(func(context.Context, *worker.Message) error {
			done.Add(1)
			return nil
		}), func(o *worker.Options) { o.Concurrency = 20 })
		if err != nil {
			t.Fatal(err)
		}
		rctx, stop := context.WithCancel(ctx)
		errc := make(chan error, 1)
		go func() { errc <- w.Run(rctx) }()
		deadline := time.Now().Add(limit)
		for !until() && time.Now().Before(deadline) {
			time.Sleep(20 * time.Millisecond)
		}
		stop()
		if err := <-errc; err != nil {
			t.Fatalf("Run: %v", err)
		}
	}
	// The first run finds nothing and stops with its long polls waiting.
	runFor(func() bool { return false }, 500*time.Millisecond)

	const jobs = 47
	for first := 0; first < jobs; first += 10 {
		in := &sqs.SendMessageBatchInput{QueueUrl: aws.String(setup.QueueURL)}
		for i := first; i < min(first+10, jobs); i++ {
			in.Entries = append(in.Entries, types.SendMessageBatchRequestEntry{Id: aws.String(strconv.Itoa(i)), MessageBody: aws.String("job " + strconv.Itoa(i))})
		}
		if _, err := c.SendMessageBatch(ctx, in); err != nil {
			t.Fatal(err)
		}
	}
	// Well under the 30 s visibility timeout a hidden job would wait out.
	runFor(func() bool { return done.Load() >= jobs }, 10*time.Second)
	if n := done.Load(); n != jobs {
		t.Errorf("the second run processed %d of %d jobs within 10 s; abandoned long polls of the first run took the others", n, jobs)
	}
}

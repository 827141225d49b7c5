package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/sqsworker/sqsworker/dlq"
	"github.com/sqsworker/sqsworker/examples/internal/exampleutil"
	"github.com/sqsworker/sqsworker/queueref"
	"github.com/sqsworker/sqsworker/retry"
	"github.com/sqsworker/sqsworker/worker"
)

func main() {
	exampleutil.Main("fifo", func(ctx context.Context, cfg aws.Config) error {
		return run(ctx, os.Stdout, sqs.NewFromConfig(cfg))
	})
}

var accounts = []string{"account-a", "account-b", "account-c"}

const entries = 4 // per account

// flakyEntry fails its first attempt.
const flakyEntry = "account-b/2"

func run(ctx context.Context, out io.Writer, client *sqs.Client) error {
	start := time.Now()
	name := "sqsworker-fifo-" + strconv.FormatInt(time.Now().UnixNano(), 36)
	setup, err := dlq.Setup(ctx, client, dlq.SetupOptions{Name: name, FIFO: true})
	if err != nil {
		return err
	}
	target := setup.Target()
	defer exampleutil.DeleteQueues(ctx, client, target.SourceURL, target.DLQURL)
	fmt.Fprintf(out, "FIFO queue %s, dead-letter queue %s\n", queueref.Name(target.SourceURL), queueref.Name(target.DLQURL))
	// The FIFO rule: a receive counts for every message released behind a
	// failed one of its group, so maxReceiveCount is ten times the attempts.
	fmt.Fprintf(out, "maxReceiveCount %d: %d × the default policy's 4 attempts (dlq.RecommendedMaxReceiveCount(4, true) = %d)\n",
		setup.MaxReceiveCount, dlq.RecommendedMaxReceiveCount(4, true)/4, dlq.RecommendedMaxReceiveCount(4, true))

	// One batch per account: a batch keeps its order within a group.
	for _, acct := range accounts {
		in := &sqs.SendMessageBatchInput{QueueUrl: aws.String(target.SourceURL)}
		for n := 1; n <= entries; n++ {
			id := fmt.Sprintf("%s/%d", acct, n)
			in.Entries = append(in.Entries, types.SendMessageBatchRequestEntry{
				Id:                     aws.String(strconv.Itoa(n)),
				MessageBody:            aws.String(id),
				MessageGroupId:         aws.String(acct),
				MessageDeduplicationId: aws.String(strings.ReplaceAll(id, "/", "-")),
			})
		}
		if _, err := client.SendMessageBatch(ctx, in); err != nil {
			return fmt.Errorf("sending %s's entries: %w", acct, err)
		}
	}
	fmt.Fprintf(out, "sent %d entries to each of %s\n", entries, strings.Join(accounts, ", "))

	var mu sync.Mutex
	applied := map[string][]int{} // account → entries in the order applied
	attempts := map[string]int{}  // entry → handler starts
	h := worker.HandlerFunc(func(ctx context.Context, m *worker.Message) error {
		acct, nstr, _ := strings.Cut(m.Body, "/")
		n, _ := strconv.Atoi(nstr)
		time.Sleep(100 * time.Millisecond) // the work
		mu.Lock()
		defer mu.Unlock()
		attempts[m.Body]++
		at := time.Since(start).Seconds()
		if m.Body == flakyEntry && m.Attempt == 1 {
			fmt.Fprintf(out, "%5.1fs  %s entry %d: failed (attempt 1); the group waits for its retry\n", at, acct, n)
			return errors.New("ledger service busy")
		}
		applied[acct] = append(applied[acct], n)
		fmt.Fprintf(out, "%5.1fs  %s entry %d applied (group %s, attempt %d)\n", at, acct, n, m.GroupID, m.Attempt)
		return nil
	})
	w, err := worker.New(client, target.SourceURL, h, func(o *worker.Options) {
		o.RetryPolicy = retry.PolicyFunc(func(attempt int) (time.Duration, bool) {
			return time.Second, attempt <= 3 // three retries, a second apart
		})
	})
	if err != nil {
		return err
	}
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	runErr := make(chan error, 1)
	go func() { runErr <- w.Run(runCtx) }()
	total := func() int {
		mu.Lock()
		defer mu.Unlock()
		n := 0
		for _, a := range applied {
			n += len(a)
		}
		return n
	}
	err = exampleutil.WaitFor(ctx, 30*time.Second, func() bool { return total() == len(accounts)*entries && w.Stats().InFlight == 0 })
	cancel()
	if rerr := <-runErr; err == nil {
		err = rerr
	}
	if err != nil {
		return fmt.Errorf("waiting for the entries (%d applied): %w", total(), err)
	}

	want := []int{1, 2, 3, 4}
	for _, acct := range accounts {
		fmt.Fprintf(out, "%s: applied in order %v\n", acct, applied[acct])
		if !slices.Equal(applied[acct], want) {
			return fmt.Errorf("%s's entries were applied as %v, want %v", acct, applied[acct], want)
		}
	}
	if attempts[flakyEntry] != 2 {
		return fmt.Errorf("%s ran %d times, want 2 (one failure, one retry)", flakyEntry, attempts[flakyEntry])
	}
	for _, u := range []string{target.SourceURL, target.DLQURL} {
		c, err := dlq.Count(ctx, client, u)
		if err != nil {
			return err
		}
		if c.Total() != 0 {
			return fmt.Errorf("queue %s still holds %d messages", queueref.Name(u), c.Total())
		}
	}
	fmt.Fprintln(out, "ok: every account's entries applied once, in order, the failed one retried in place")
	return nil
}

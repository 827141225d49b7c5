package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/sqsworker/sqsworker/dlq"
	"github.com/sqsworker/sqsworker/examples/internal/exampleutil"
	"github.com/sqsworker/sqsworker/producer"
	"github.com/sqsworker/sqsworker/retry"
	"github.com/sqsworker/sqsworker/unique"
	"github.com/sqsworker/sqsworker/worker"
)

func main() {
	exampleutil.Main("unique", func(ctx context.Context, cfg aws.Config) error {
		return run(ctx, os.Stdout, sqs.NewFromConfig(cfg), exampleutil.DynamoDB(cfg))
	})
}

const (
	report = "report/acct-42" // until settled: one report job at a time
	digest = "digest/acct-42" // for a period: one digest per hour
)

func run(ctx context.Context, w io.Writer, client *sqs.Client, db *dynamodb.Client) error {
	start := time.Now()
	out := exampleutil.LockedWriter(w) // the settlement hook prints while the main flow does
	say := func(format string, args ...any) {
		fmt.Fprintf(out, "%5.1fs  %s\n", time.Since(start).Seconds(), fmt.Sprintf(format, args...))
	}
	suffix := strconv.FormatInt(time.Now().UnixNano(), 36)

	table := "sqsworker-unique-" + suffix
	if err := unique.CreateTable(ctx, db, table, 0); err != nil {
		return err
	}
	defer exampleutil.DeleteTable(ctx, db, table)
	queues, err := dlq.Setup(ctx, client, dlq.SetupOptions{Name: "sqsworker-unique-" + suffix})
	if err != nil {
		return err
	}
	defer exampleutil.DeleteQueues(ctx, client, queues.QueueURL, queues.DLQURL)
	keys, err := unique.New(db, table, func(o *unique.Options) {
		o.Retention = queues.Retention // bounds how long the key of a lost job stays held
		o.RecordJobID = true           // a refused send learns the holding job's ID (one more write per job)
	})
	if err != nil {
		return err
	}
	p, err := producer.New(client, queues.QueueURL)
	if err != nil {
		return err
	}
	defer p.Close(context.WithoutCancel(ctx))
	say("table %s, queue %s", table, queues.QueueURL)

	accepted := 0
	send := func(k unique.Key, body string) error {
		res, err := keys.Send(ctx, p, k, producer.Message{Body: body})
		switch {
		case errors.Is(err, unique.ErrDuplicate):
			say("send %-15s refused: job %s holds the key", k.Name, short(res.MessageID))
			return nil
		case err != nil:
			return err
		}
		accepted++
		say("send %-15s accepted: job %s", k.Name, short(res.MessageID))
		return nil
	}
	for range 3 {
		if err := send(unique.Key{Name: report}, `{"report": "acct-42"}`); err != nil {
			return err
		}
	}
	for range 2 {
		if err := send(unique.Key{Name: digest, For: time.Hour}, `{"digest": "acct-42"}`); err != nil {
			return err
		}
	}

	var mu sync.Mutex
	events := make(chan worker.Settlement, 16)
	reportRuns := 0
	h := worker.HandlerFunc(func(ctx context.Context, m *worker.Message) error {
		if !strings.Contains(m.Body, "report") {
			return nil
		}
		mu.Lock()
		reportRuns++
		first := reportRuns == 1
		mu.Unlock()
		if first {
			return retry.After(time.Second, errors.New("the reporting database is busy"))
		}
		return nil
	})
	wk, err := worker.New(client, queues.QueueURL, keys.Middleware(h), func(o *worker.Options) {
		o.WaitTime = time.Second
		o.OnSettled = func(s worker.Settlement) {
			keys.Settled(s) // frees the key of a dead-lettered job (and of a deleted one whose early release failed)
			say("job %s (%s): %s", short(s.Message.ID), s.Message.Body, s.Outcome)
			events <- s
		}
	})
	if err != nil {
		return err
	}
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	runErr := make(chan error, 1)
	go func() { runErr <- wk.Run(runCtx) }()
	wait := func(body string, outcome worker.Outcome) error {
		timeout := time.After(30 * time.Second)
		for {
			select {
			case s := <-events:
				if strings.Contains(s.Message.Body, body) && s.Outcome == outcome {
					return nil
				}
			case <-timeout:
				return fmt.Errorf("no %s job was %s within 30 s (%+v)", body, outcome, wk.Stats())
			case <-ctx.Done():
				return ctx.Err()
			}
		}
	}

	if err := wait("report", worker.Retrying); err != nil {
		return err
	}
	if err := send(unique.Key{Name: report}, `{"report": "acct-42"}`); err != nil { // a retry keeps the key
		return err
	}
	if err := wait("report", worker.Deleted); err != nil {
		return err
	}
	if err := send(unique.Key{Name: report}, `{"report": "acct-42"}`); err != nil { // freed: a new job
		return err
	}
	if err := wait("report", worker.Deleted); err != nil {
		return err
	}
	if err := send(unique.Key{Name: digest, For: time.Hour}, `{"digest": "acct-42"}`); err != nil { // still within the hour
		return err
	}
	cancel()
	if err := <-runErr; err != nil {
		return err
	}

	held, err := keys.Held(ctx)
	if err != nil {
		return err
	}
	st := keys.Stats()
	say("keys held: %d (the digest's hour); claimed %d, refused %d, released %d; %d DynamoDB requests",
		held, st.Claimed, st.Refused, st.Released, st.Requests)
	if accepted != 3 || st.Refused != 5 || held != 1 {
		return fmt.Errorf("accepted %d sends, refused %d, %d keys held; want 3, 5 and 1", accepted, st.Refused, held)
	}
	say("ok: one report job at a time, one digest per hour")
	return nil
}

// short abbreviates a message ID for the output.
func short(id string) string {
	if len(id) > 8 {
		return id[:8] + "…"
	}
	return id
}

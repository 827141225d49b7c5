package e2e

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http/httptest"
	"net/url"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sns"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/chromedp/chromedp"

	"github.com/sqsworker/sqsworker/console"
	"github.com/sqsworker/sqsworker/dlq"
	"github.com/sqsworker/sqsworker/fanout"
	"github.com/sqsworker/sqsworker/harness/testenv"
	"github.com/sqsworker/sqsworker/queueref"
	"github.com/sqsworker/sqsworker/retry"
	"github.com/sqsworker/sqsworker/worker"
)

// screenshots returns the directory for the test's screenshots.
func screenshots(t *testing.T) string {
	dir := os.Getenv(ScreenshotsEnv)
	if dir == "" {
		return t.TempDir()
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// A subscription's dead-letter queue, from the overview's fan-out chain to
// its triage page, redriven from the page: the messages reach the
// subscribed queue, and only it (not the topic's other subscriber, not a
// dead-letter queue). The emulator's SNS never fails a delivery, so the
// test puts in the subscription's dead-letter queue what SNS would: the
// envelopes it delivered to the queue.
func TestSubscriptionDLQRedrivenInChromium(t *testing.T) {
	b := startBrowser(t)
	b.dir = screenshots(t)
	client, snsClient := testenv.SQS(t), testenv.SNS(t)
	ctx := context.Background()
	topic := testenv.UniqueName("rentals")
	billing, err := fanout.Setup(ctx, snsClient, client, fanout.SetupOptions{Topic: topic, Queue: dlq.SetupOptions{Name: testenv.UniqueName("billing")}})
	if err != nil {
		t.Fatal(err)
	}
	shipping, err := fanout.Setup(ctx, snsClient, client, fanout.SetupOptions{Topic: topic, Queue: dlq.SetupOptions{Name: testenv.UniqueName("shipping")}})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		if _, err := snsClient.Publish(ctx, &sns.PublishInput{TopicArn: aws.String(billing.TopicARN), Message: aws.String(fmt.Sprintf(`{"rental":%d}`, i))}); err != nil {
			t.Fatal(err)
		}
	}
	// billing's deliveries go to its subscription's dead-letter queue, as
	// if SNS could not deliver them; shipping got its own.
	var envelopes []string
	for _, m := range testenv.Drain(t, client, billing.Queue.QueueURL) {
		envelopes = append(envelopes, aws.ToString(m.Body))
		if _, err := client.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(billing.FanoutDLQURL), MessageBody: m.Body}); err != nil {
			t.Fatal(err)
		}
	}
	if n := len(testenv.Drain(t, client, shipping.Queue.QueueURL)); len(envelopes) != 3 || n != 3 {
		t.Fatalf("the topic delivered %d to billing and %d to shipping; want 3 each", len(envelopes), n)
	}
	slices.Sort(envelopes)

	h, err := console.New(client, func(o *console.Options) {
		o.Queues = []string{billing.Queue.QueueURL, shipping.Queue.QueueURL}
		o.SNS = snsClient
		o.Actions = true
		o.Logger = slog.New(slog.DiscardHandler)
	})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	defer srv.Close()
	bq := queueref.Name(billing.Queue.QueueURL)
	b.do(chromedp.Navigate(srv.URL+"/"), chromedp.WaitVisible(chromedp.CSS("#queues")),
		chromedp.Click(chromedp.CSS(fmt.Sprintf(`tr[data-queue=%q] a.sub-dlq`, bq))), chromedp.WaitVisible(chromedp.CSS("#groups")))
	if got := b.text("#total"); got != "3" {
		t.Fatalf("the subscription DLQ's page shows %s messages; want 3", got)
	}
	if got := b.text("#dlq-name"); got != queueref.Name(billing.FanoutDLQURL) {
		t.Errorf("the page reads %s; want the subscription's dead-letter queue %s", got, queueref.Name(billing.FanoutDLQURL))
	}
	if got := b.text("#subscription"); !strings.Contains(got, "fanout.Redrive") || !strings.Contains(got, topic) {
		t.Errorf("the page does not say where a redrive goes: %q", got)
	}
	if c, err := dlq.Count(ctx, client, billing.FanoutDLQURL); err != nil || c.Visible != 3 || c.InFlight != 0 {
		t.Fatalf("after the read the subscription DLQ counts %+v (%v); want 3 visible, none hidden", c, err)
	}
	b.shot("subscription-dlq")
	// The search finds a message of it as of a queue's dead-letter queue.
	subDLQ := srv.URL + "/queues/" + bq + "/topics/" + topic + "/dlq"
	b.do(chromedp.Navigate(subDLQ+"/search?text="+url.QueryEscape(`rental\":1`)), chromedp.WaitVisible(chromedp.CSS("#results")))
	if got := b.text("#matched"); got != "1" {
		t.Errorf("the search of the subscription DLQ matched %s; want 1", got)
	}
	b.do(chromedp.Navigate(subDLQ), chromedp.WaitVisible(chromedp.CSS("#all-form")),
		chromedp.Click(chromedp.CSS("#all-form button")))
	if st := b.waitJob(); st != "done" || b.text("#job-moved") != "3" {
		t.Fatalf("the redrive: %s, %s moved: %s", st, b.text("#job-moved"), b.text("#job-error"))
	}
	var got []string
	for _, m := range testenv.Drain(t, client, billing.Queue.QueueURL) {
		got = append(got, aws.ToString(m.Body))
	}
	slices.Sort(got)
	if !slices.Equal(got, envelopes) {
		t.Fatalf("billing got %d messages; want its 3 envelopes back:\n%v", len(got), got)
	}
	for _, u := range []string{shipping.Queue.QueueURL, billing.FanoutDLQURL, billing.Queue.DLQURL, shipping.FanoutDLQURL, shipping.Queue.DLQURL} {
		if c, err := dlq.Count(ctx, client, u); err != nil || c.Total() != 0 {
			t.Errorf("%s counts %+v (%v) after the redrive; want nothing: the redrive goes to billing only", queueref.Name(u), c, err)
		}
	}
}

// Retention as the acceptance states it: messages sent to a queue
// with a one-hour retention and dead-lettered (by SQS's redrive, which
// keeps the enqueue time, and by the worker) show when they expire, ±1
// minute, each; the overview warns. And no page loses a message or leaves
// one hidden: after each page the queues hold what they held, all visible.
func TestRetentionOfDeadLetteredMessagesInChromium(t *testing.T) {
	b := startBrowser(t)
	client := testenv.SQS(t)
	ctx := context.Background()
	setup, err := dlq.Setup(ctx, client, dlq.SetupOptions{Name: testenv.UniqueName("retention"), MaxReceiveCount: 1,
		Retention: time.Hour, DLQRetention: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	target := setup.Target()
	sentAt := map[string]time.Time{} // body → when it was sent
	send := func(body string) {
		sentAt[body] = time.Now()
		if _, err := client.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(target.SourceURL), MessageBody: aws.String(body)}); err != nil {
			t.Fatal(err)
		}
	}
	// Three moved by SQS's redrive: received past maxReceiveCount 1.
	for i := range 3 {
		send(fmt.Sprintf("sqs-moved-%d", i))
	}
	for deadline := time.Now().Add(30 * time.Second); ; {
		out, err := client.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(target.SourceURL), MaxNumberOfMessages: 10})
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range out.Messages { // visible again at once: the next receive is past maxReceiveCount
			if _, err := client.ChangeMessageVisibility(ctx, &sqs.ChangeMessageVisibilityInput{QueueUrl: aws.String(target.SourceURL), ReceiptHandle: m.ReceiptHandle}); err != nil {
				t.Fatal(err)
			}
		}
		if c, err := dlq.Count(ctx, client, target.DLQURL); err == nil && c.Total() == 3 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("SQS did not move the 3 messages to the dead-letter queue in 30 s")
		}
	}
	// Two the worker dead-letters (sent to the dead-letter queue anew).
	send("worker-0")
	send("worker-1")
	w, err := worker.New(client, target.SourceURL, worker.HandlerFunc(func(context.Context, *worker.Message) error {
		return retry.Permanent(errors.New("rejected"))
	}), func(o *worker.Options) { o.Logger = slog.New(slog.DiscardHandler); o.WaitTime = time.Second })
	if err != nil {
		t.Fatal(err)
	}
	wctx, stop := context.WithCancel(ctx)
	ran := make(chan error, 1)
	go func() { ran <- w.Run(wctx) }()
	for deadline := time.Now().Add(30 * time.Second); w.Stats().DeadLettered < 2; time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the worker dead-lettered %d of 2 in 30 s", w.Stats().DeadLettered)
		}
	}
	dead := time.Now()
	stop()
	if err := <-ran; err != nil && !errors.Is(err, context.Canceled) {
		t.Fatal(err)
	}
	for _, body := range []string{"worker-0", "worker-1"} {
		sentAt[body] = dead // the worker's copy was enqueued in the dead-letter queue when it failed
	}

	h, err := console.New(client, func(o *console.Options) {
		o.Queues = []string{target.SourceURL, target.DLQURL}
		o.Actions = true
		o.SampleEvery = time.Second
		o.Logger = slog.New(slog.DiscardHandler)
	})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	defer srv.Close()
	src := queueref.Name(target.SourceURL)
	base := srv.URL + "/queues/" + src + "/dlq"
	unchanged := func(page string) {
		t.Helper()
		if c, err := dlq.Count(ctx, client, target.DLQURL); err != nil || c.Visible != 5 || c.InFlight != 0 || c.Delayed != 0 {
			t.Errorf("after the %s page the dead-letter queue counts %+v (%v); want all 5 visible", page, c, err)
		}
		if c, err := dlq.Count(ctx, client, target.SourceURL); err != nil || c.Total() != 0 {
			t.Errorf("after the %s page the source queue counts %+v (%v); want none", page, c, err)
		}
	}

	b.do(chromedp.Navigate(base), chromedp.WaitVisible(chromedp.CSS("#expiry")))
	unchanged("triage")
	if got := b.text("#expiring"); got != "5" {
		t.Errorf("the triage page: %s expire within 24 h; want 5", got)
	}
	b.do(chromedp.Navigate(base+"/search?fresh=1&text=-"), chromedp.WaitVisible(chromedp.CSS("#results")))
	unchanged("search")
	type row struct{ Body, Expires string }
	rows := run(b, chromedp.Evaluate[[]row](`[...document.querySelectorAll("#results tr.result")].map(r => ({
		Body: r.querySelector("pre.sample").textContent, Expires: r.querySelector("time.expires").getAttribute("datetime")}))`))
	if len(rows) != 5 {
		t.Fatalf("the search lists %d messages; want 5", len(rows))
	}
	for _, r := range rows {
		exp, err := time.Parse(time.RFC3339, r.Expires)
		want := sentAt[strings.TrimSpace(r.Body)].Add(time.Hour)
		if err != nil || (exp.Sub(want)).Abs() > time.Minute {
			t.Errorf("%s expires %s (%v); want %s ±1 min (enqueued + the 1-hour retention)", r.Body, r.Expires, err, want.UTC().Format(time.RFC3339))
		}
	}
	b.do(chromedp.Click(chromedp.CSS("#results tr.result a")), chromedp.WaitVisible(chromedp.CSS("#body")))
	unchanged("message")
	b.do(chromedp.Navigate(srv.URL+"/"), chromedp.WaitVisible(chromedp.CSS("#queues")))
	unchanged("overview")
	if got := b.text(fmt.Sprintf(`tr[data-queue=%q] .expiring`, src)); !strings.HasPrefix(got, "5 expire within 24 h") {
		t.Errorf("the overview's warning: %q; want 5 expire within 24 h", got)
	}
	b.do(chromedp.Navigate(srv.URL+"/queues/"+src+"/history"), chromedp.WaitVisible(chromedp.CSS("#source")))
	unchanged("history")
	b.do(chromedp.Navigate(srv.URL+"/actions"), chromedp.WaitVisible(chromedp.CSS("#actions")))
	unchanged("actions")
	// A delete that is not confirmed takes nothing.
	b.do(chromedp.Navigate(base), chromedp.WaitVisible(chromedp.CSS("#groups")),
		chromedp.Click(chromedp.CSS("tbody.group button.delete-group")), chromedp.WaitVisible(chromedp.CSS("#confirm-question")))
	unchanged("delete confirmation")
}

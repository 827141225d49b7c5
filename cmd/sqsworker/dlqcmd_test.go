package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/sqsworker/sqsworker/dlq"
	"github.com/sqsworker/sqsworker/internal/deadletter"
	"github.com/sqsworker/sqsworker/queueref"
	"github.com/sqsworker/sqsworker/sqstest"
)

// deadLetter creates queue name with a DLQ and moves n messages there
// with provenance, as the worker would.
func deadLetter(t *testing.T, h *harness, name string, n int, errText func(i int) string) dlq.Target {
	t.Helper()
	ctx := context.Background()
	setup, err := dlq.Setup(ctx, h.fake, dlq.SetupOptions{Name: name})
	if err != nil {
		t.Fatal(err)
	}
	target := setup.Target()
	mover, err := deadletter.NewMover(h.fake, deadletter.Target(target))
	if err != nil {
		t.Fatal(err)
	}
	for i := range n {
		h.fake.MustSend(t, target.SourceURL, fmt.Sprintf(`{"job":%d}`, i), func(in *sqs.SendMessageInput) {
			in.MessageAttributes = map[string]types.MessageAttributeValue{"tenant": {DataType: aws.String("String"), StringValue: aws.String("acme")}}
		})
		out, err := h.fake.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(target.SourceURL),
			MessageAttributeNames: []string{"All"}, MessageSystemAttributeNames: []types.MessageSystemAttributeName{"All"}})
		if err != nil || len(out.Messages) != 1 {
			t.Fatalf("receive: %v", err)
		}
		p := deadletter.Provenance{Error: errText(i), Attempt: 4, Handler: "billing.Charge", FailedAt: h.now.Add(-time.Duration(i+1) * time.Hour)}
		if err := mover.Move(ctx, out.Messages[0], p); err != nil {
			t.Fatal(err)
		}
	}
	return target
}

func TestDLQLs(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t)
		deadLetter(t, h, "orders", 3, func(int) string { return "boom" })
		deadLetter(t, h, "invoices", 0, nil)
		h.fake.MustCreateQueue(t, "plain", nil)

		code, out, errOut := h.run(t, "dlq", "ls")
		if code != exitOK || errOut != "" {
			t.Fatalf("exit %d, stderr %q", code, errOut)
		}
		golden(t, "dlq-ls", out)

		code, out, _ = h.run(t, "dlq", "ls", "--prefix", "ord", "-o", "json")
		var rows []lsRow
		if err := json.Unmarshal([]byte(out), &rows); code != exitOK || err != nil || len(rows) != 1 || rows[0].Messages.Visible != 3 || rows[0].DLQ != "orders-dlq" {
			t.Errorf("json: exit %d, %v, %+v", code, err, rows)
		}

		code, _, errOut = h.run(t, "dlq", "ls", "plain")
		if code != exitProblems || !strings.Contains(errOut, "no RedrivePolicy") {
			t.Errorf("a queue without a DLQ: exit %d, stderr %q", code, errOut)
		}
	})
}

func TestDLQPeek(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t)
		target := deadLetter(t, h, "orders", 3, func(i int) string { return fmt.Sprintf("card declined #%d", i) })
		code, out, errOut := h.run(t, "dlq", "peek", "orders", "-n", "2")
		if code != exitOK || errOut != "" {
			t.Fatalf("exit %d, stderr %q", code, errOut)
		}
		flat := strings.Join(strings.Fields(out), " ")
		for _, want := range []string{
			"dead-letter queue orders-dlq of orders: about 3 messages; showing 2",
			"error: card declined #0",
			"failed: attempt 4, handler billing.Charge, from orders",
			"failed at: 2025-03-01T13:00:00Z (1h ago)",
			"received 1 time attribute: tenant = acme",
			`body: {"job":0}`,
			"receive counts went up by one",
		} {
			if !strings.Contains(flat, want) {
				t.Errorf("peek output lacks %q:\n%s", want, out)
			}
		}
		if visible, inflight := len(h.fake.Messages(target.DLQURL, "visible")), len(h.fake.Messages(target.DLQURL, "inflight")); visible != 3 || inflight != 0 {
			t.Errorf("after peek: %d visible, %d in flight", visible, inflight)
		}

		code, out, _ = h.run(t, "dlq", "peek", "orders", "-o", "json", "-n", "0")
		var got struct {
			DLQ      string       `json:"dlq"`
			Messages []messageOut `json:"messages"`
		}
		if err := json.Unmarshal([]byte(out), &got); code != exitOK || err != nil || len(got.Messages) != 3 {
			t.Fatalf("json: exit %d, %v\n%s", code, err, out)
		}
		m := got.Messages[0]
		if m.Provenance == nil || m.Provenance.Attempt != 4 || m.Attributes["tenant"] != "acme" || queueref.Name(m.Origin) != "orders" {
			t.Errorf("json message = %+v", m)
		}
	})
}

func TestDLQRedrive(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t)
		target := deadLetter(t, h, "orders", 6, func(i int) string {
			if i%2 == 0 {
				return "timeout"
			}
			return "bad input"
		})

		code, out, errOut := h.run(t, "dlq", "redrive", "orders", "--dry-run", "--error-contains", "timeout")
		if code != exitOK || !strings.Contains(out, "dry run: 3 messages of 6 scanned would move from orders-dlq to orders; nothing was moved") {
			t.Fatalf("dry run: exit %d\n%s\n%s", code, out, errOut)
		}
		if strings.Count(out, "timeout") != 3 {
			t.Errorf("dry run does not list the 3 matches:\n%s", out)
		}

		code, out, errOut = h.run(t, "dlq", "redrive", "orders", "--attr", "sqsworker.dlq.error=bad input", "--rate", "50")
		if code != exitOK || !strings.Contains(out, "moved 3 messages from orders-dlq to orders (manual); 3 left in place") {
			t.Fatalf("filtered: exit %d\n%s\n%s", code, out, errOut)
		}
		if !strings.Contains(errOut, "orders-dlq → orders: 3/6 moved (50%), 6 scanned, 3 skipped, done") {
			t.Errorf("no final progress line on stderr:\n%s", errOut)
		}

		// No filter: a message move task does the rest.
		h.tty = true
		code, out, errOut = h.run(t, "dlq", "redrive", "orders", "-o", "text")
		if code != exitOK || !strings.Contains(out, "moved 3 messages from orders-dlq to orders (move-task)") {
			t.Fatalf("move task: exit %d\n%s\n%s", code, out, errOut)
		}
		if !strings.Contains(errOut, "\rorders-dlq → orders: 3/3 moved (100%), done") || !strings.HasSuffix(errOut, "\n") {
			t.Errorf("terminal progress = %q", errOut)
		}
		if n := len(h.fake.Messages(target.SourceURL)); n != 6 || len(h.fake.Messages(target.DLQURL)) != 0 {
			t.Errorf("source %d, DLQ %d", n, len(h.fake.Messages(target.DLQURL)))
		}
	})
}

// failingAgain is an SQS client whose queue's jobs fail again as soon as a
// redrive has moved them: after each delete from the dead-letter queue, a
// worker takes what the queue holds and dead-letters it anew.
type failingAgain struct {
	*sqstest.Fake
	t      *testing.T
	target dlq.Target
	runs   int
}

func (c *failingAgain) DeleteMessageBatch(ctx context.Context, in *sqs.DeleteMessageBatchInput, optFns ...func(*sqs.Options)) (*sqs.DeleteMessageBatchOutput, error) {
	out, err := c.Fake.DeleteMessageBatch(ctx, in, optFns...)
	if aws.ToString(in.QueueUrl) != c.target.DLQURL || err != nil {
		return out, err
	}
	mover, merr := deadletter.NewMover(c.Fake, deadletter.Target(c.target))
	if merr != nil {
		c.t.Fatal(merr)
	}
	for {
		got, rerr := c.Fake.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(c.target.SourceURL), MaxNumberOfMessages: 10,
			MessageAttributeNames: []string{"All"}, MessageSystemAttributeNames: []types.MessageSystemAttributeName{"All"}})
		if rerr != nil {
			c.t.Fatal(rerr)
		}
		if len(got.Messages) == 0 {
			return out, err
		}
		for _, m := range got.Messages {
			c.runs++
			if merr := mover.Move(ctx, m, deadletter.Provenance{Error: "still failing", Handler: "billing.Charge"}); merr != nil {
				c.t.Fatal(merr)
			}
		}
	}
}

// A redrive of jobs that fail again ends, and says how many came back
// (issue 37: "210/3 moved (100%)", then "624/3", until a timeout stopped it).
func TestDLQRedriveReportsWhatCameBack(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t)
		target := deadLetter(t, h, "orders", 3, func(int) string { return "boom" })
		c := &failingAgain{Fake: h.fake, t: t, target: target}
		h.client = c
		code, out, errOut := h.run(t, "dlq", "redrive", "orders", "--method", "manual")
		if code != exitOK || !strings.Contains(out, "moved 3 messages from orders-dlq to orders (manual); 3 messages came back (they failed again) and stay in the dead-letter queue") {
			t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
		}
		if !strings.Contains(errOut, "orders-dlq → orders: 3/3 moved (100%), 6 scanned, 3 came back (failed again), done") {
			t.Errorf("progress:\n%s", errOut)
		}
		if c.runs != 3 || len(h.fake.Messages(target.DLQURL)) != 3 {
			t.Errorf("the jobs ran %d times; the DLQ holds %d; want 3 and 3", c.runs, len(h.fake.Messages(target.DLQURL)))
		}
		code, out, _ = h.run(t, "dlq", "redrive", "orders", "--method", "manual", "-o", "json")
		var res struct {
			dlq.RedriveResult
			Messages []messageOut `json:"messages"`
		}
		if err := json.Unmarshal([]byte(out), &res); code != exitOK || err != nil || res.Moved != 3 || res.CameBack != 3 || !strings.Contains(out, `"cameBack": 3`) {
			t.Fatalf("json: exit %d, %v\n%s", code, err, out)
		}
		back := 0
		for _, m := range res.Messages {
			if m.Action == "came-back" {
				back++
			}
		}
		if back != 3 {
			t.Errorf("the JSON lists %d messages as came-back, want 3:\n%s", back, out)
		}
	})
}

// With a dead-letter queue shared by two queues, redrive QUEUE --to X moves
// only QUEUE's messages (manually: a move task would move them all), and
// moving every source's messages takes --all-sources.
func TestDLQRedriveSharedDLQToAnotherQueue(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t)
		orders := deadLetter(t, h, "orders", 2, func(int) string { return "orders failed" })
		refundsURL := h.fake.MustCreateQueue(t, "refunds", map[string]string{"RedrivePolicy": fmt.Sprintf(`{"deadLetterTargetArn":%q,"maxReceiveCount":5}`, orders.DLQARN)})
		refunds, err := dlq.Discover(context.Background(), h.fake, refundsURL)
		if err != nil {
			t.Fatal(err)
		}
		mover, err := deadletter.NewMover(h.fake, deadletter.Target(refunds))
		if err != nil {
			t.Fatal(err)
		}
		for range 3 {
			h.fake.MustSend(t, refundsURL, "refund")
			out, err := h.fake.ReceiveMessage(context.Background(), &sqs.ReceiveMessageInput{QueueUrl: aws.String(refundsURL)})
			if err != nil || len(out.Messages) != 1 {
				t.Fatalf("receive: %v", err)
			}
			if err := mover.Move(context.Background(), out.Messages[0], deadletter.Provenance{Error: "refund failed"}); err != nil {
				t.Fatal(err)
			}
		}
		parking := h.fake.MustCreateQueue(t, "parking", nil)

		code, _, errOut := h.run(t, "dlq", "redrive", "orders", "--to", "parking", "--method", "move-task")
		if code != exitUsage || !strings.Contains(errOut, "also serves queue refunds") || !strings.Contains(errOut, "--method manual") {
			t.Errorf("move task on a shared DLQ: exit %d, stderr %q", code, errOut)
		}
		if n := len(h.fake.Messages(parking)); n != 0 {
			t.Fatalf("the refused move task moved %d messages", n)
		}
		code, out, errOut := h.run(t, "dlq", "redrive", "orders", "--to", "parking")
		if code != exitOK || !strings.Contains(out, "moved 2 messages from orders-dlq to parking (manual); 3 left in place") {
			t.Errorf("redrive orders --to parking: exit %d\n%s%s", code, out, errOut)
		}
		if n := len(h.fake.Messages(parking)); n != 2 {
			t.Errorf("parking holds %d; want orders' 2", n)
		}

		code, _, errOut = h.run(t, "dlq", "redrive", "orders-dlq", "--to", "parking")
		if code != exitUsage || !strings.Contains(errOut, "serves queues orders, refunds") || !strings.Contains(errOut, "--all-sources") {
			t.Errorf("redrive of the shared DLQ by name with --to: exit %d, stderr %q", code, errOut)
		}
		code, _, errOut = h.run(t, "dlq", "redrive", "orders-dlq", "--all-sources")
		if code != exitUsage || !strings.Contains(errOut, "--all-sources needs --to") {
			t.Errorf("--all-sources without --to: exit %d, stderr %q", code, errOut)
		}
		code, out, errOut = h.run(t, "dlq", "redrive", "orders-dlq", "--to", "parking", "--all-sources")
		if code != exitOK || !strings.Contains(out, "moved 3 messages from orders-dlq to parking") {
			t.Errorf("--all-sources: exit %d\n%s%s", code, out, errOut)
		}
		if n := len(h.fake.Messages(parking)); n != 5 {
			t.Errorf("parking holds %d; want all 5", n)
		}
	})
}

func TestDLQRedriveJSONAndFailureExit(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t)
		deadLetter(t, h, "orders", 2, func(int) string { return "x" })
		h.fake.MustCreateQueue(t, "parking", nil)
		code, out, _ := h.run(t, "dlq", "redrive", "orders", "--to", "parking", "--method", "manual", "--keep-provenance", "-o", "json")
		var res struct {
			Destination string `json:"destination"`
			Moved       int    `json:"moved"`
			Method      string `json:"method"`
		}
		if err := json.Unmarshal([]byte(out), &res); code != exitOK || err != nil || res.Moved != 2 || res.Destination != "parking" || res.Method != "manual" {
			t.Errorf("exit %d, %v, %+v\n%s", code, err, res, out)
		}
		code, _, errOut := h.run(t, "dlq", "redrive", "nope")
		if code != exitProblems || !strings.Contains(errOut, "queue nope does not exist") {
			t.Errorf("missing queue: exit %d, stderr %q", code, errOut)
		}
	})
}

// hideSome receives n messages of the DLQ as another reader would, hiding
// them for a minute.
func hideSome(t *testing.T, h *harness, target dlq.Target, n int) {
	t.Helper()
	out, err := h.fake.ReceiveMessage(context.Background(), &sqs.ReceiveMessageInput{QueueUrl: aws.String(target.DLQURL), MaxNumberOfMessages: int32(n), VisibilityTimeout: 60})
	if err != nil || len(out.Messages) != n {
		t.Fatalf("hiding %d messages: %v", n, err)
	}
}

// peek, redrive and ls say when messages of the DLQ are hidden, and peek
// and redrive exit 1 when they did not see every message.
func TestDLQCommandsSayWhatTheyDidNotSee(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t)
		target := deadLetter(t, h, "orders", 5, func(int) string { return "boom" })
		hideSome(t, h, target, 2)
		const notSeen = "2 messages of queue orders-dlq were not seen (it held about 5 at the start, 2 of them in flight): hidden by another reader or by a receive whose response was lost"

		code, out, errOut := h.run(t, "dlq", "ls", "orders")
		if code != exitOK || !strings.Contains(out, "note: 2 messages of orders-dlq are in flight") {
			t.Errorf("ls: exit %d\n%s%s", code, out, errOut)
		}

		code, out, errOut = h.run(t, "dlq", "peek", "orders")
		if code != exitProblems || !strings.Contains(out, "about 3 messages and 2 in flight; showing 3") || !strings.Contains(errOut, notSeen) {
			t.Errorf("peek: exit %d\n%s%s", code, out, errOut)
		}
		code, out, _ = h.run(t, "dlq", "peek", "orders", "-o", "json")
		var peek struct {
			Messages []messageOut `json:"messages"`
			NotSeen  int          `json:"notSeen"`
			Error    string       `json:"error"`
		}
		if err := json.Unmarshal([]byte(out), &peek); code != exitProblems || err != nil || len(peek.Messages) != 3 || peek.NotSeen != 2 || !strings.Contains(peek.Error, notSeen) {
			t.Errorf("peek json: exit %d, %v\n%s", code, err, out)
		}
		// Fewer than asked for with -n 2: no report.
		if code, _, errOut := h.run(t, "dlq", "peek", "orders", "-n", "2"); code != exitOK || errOut != "" {
			t.Errorf("peek -n 2: exit %d, %s", code, errOut)
		}

		code, out, errOut = h.run(t, "dlq", "redrive", "orders", "--method", "manual")
		if code != exitProblems || !strings.Contains(out, "moved 3 messages from orders-dlq to orders (manual); 2 not seen") || !strings.Contains(errOut, notSeen) {
			t.Errorf("redrive: exit %d\n%s%s", code, out, errOut)
		}

		time.Sleep(time.Minute) // the other reader's hold ends
		code, out, errOut = h.run(t, "dlq", "redrive", "orders", "--method", "manual", "-o", "json")
		if code != exitOK || !strings.Contains(out, `"moved": 2`) || strings.Contains(out, "notSeen") {
			t.Errorf("redrive after the hold: exit %d\n%s%s", code, out, errOut)
		}
	})
}

func TestDLQPurgeAsksFirst(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t)
		target := deadLetter(t, h, "orders", 2, func(int) string { return "x" })
		left := func() int { return len(h.fake.Messages(target.DLQURL)) }

		code, _, errOut := h.run(t, "dlq", "purge", "orders")
		if code != exitNotConfirm || !strings.Contains(errOut, "no terminal to ask on; pass --yes") || left() != 2 {
			t.Errorf("no terminal: exit %d, stderr %q, %d left", code, errOut, left())
		}

		h.tty, h.stdin = true, "orders\n"
		code, _, errOut = h.run(t, "dlq", "purge", "orders")
		if code != exitNotConfirm || !strings.Contains(errOut, "Type the queue name to confirm") || !strings.Contains(errOut, "not confirmed") || left() != 2 {
			t.Errorf("wrong name: exit %d, stderr %q, %d left", code, errOut, left())
		}

		h.stdin = "orders-dlq\n"
		code, out, errOut := h.run(t, "dlq", "purge", "orders")
		if code != exitOK || !strings.Contains(out, "purged orders-dlq (about 2 messages)") || left() != 0 {
			t.Errorf("confirmed: exit %d, %q, %q, %d left", code, out, errOut, left())
		}

		h.fake.MustSend(t, target.DLQURL, "again")
		h.fake.Advance(time.Minute) // SQS allows one purge a minute
		h.tty, h.stdin = false, ""
		code, out, _ = h.run(t, "dlq", "purge", "orders", "--yes", "-o", "json")
		if code != exitOK || !strings.Contains(out, `"approximatelyPurged": 1`) || left() != 0 {
			t.Errorf("--yes: exit %d, %q, %d left", code, out, left())
		}
	})
}

func TestSetupCommand(t *testing.T) {
	h := newHarness(t)
	args := []string{"setup", "orders", "--max-receive-count", "6", "--retention", "3d", "--visibility-timeout", "45s"}
	code, out, errOut := h.run(t, args...)
	if code != exitOK || errOut != "" {
		t.Fatalf("exit %d, stderr %q", code, errOut)
	}
	golden(t, "setup-created", out)

	// Again, with or without the flags: no change, and it says so.
	for _, again := range [][]string{args, {"setup", "orders"}} {
		code, out, _ := h.run(t, again...)
		if code != exitOK {
			t.Fatalf("%v: exit %d", again, code)
		}
		golden(t, "setup-unchanged", out)
	}

	// A change: only what the flag asks for.
	code, out, _ = h.run(t, "setup", "orders", "--max-receive-count", "8")
	if code != exitOK {
		t.Fatalf("raise: exit %d", code)
	}
	golden(t, "setup-changed", out)

	// Lowering needs --force.
	code, _, errOut = h.run(t, "setup", "orders", "--max-receive-count", "5", "--retention", "2d")
	if code != exitUsage || !strings.Contains(errOut, "refusing to lower queue orders's maxReceiveCount from 8 to 5 and queue orders's MessageRetentionPeriod from 3 days to 2 days") || !strings.Contains(errOut, "--force") {
		t.Errorf("lowering: exit %d, stderr %q", code, errOut)
	}
	code, out, _ = h.run(t, "setup", "orders", "--max-receive-count", "5", "--force", "-o", "json")
	var res setupOut
	if err := json.Unmarshal([]byte(out), &res); code != exitOK || err != nil || res.MaxReceiveCount != 5 || !res.Changed ||
		len(res.Changes) != 1 || res.Changes[0].Attribute != "maxReceiveCount" || res.Changes[0].From != "8" || res.Changes[0].To != "5" {
		t.Errorf("--force: exit %d, %v\n%s", code, err, out)
	}
	code, out, _ = h.run(t, "setup", "orders", "-o", "json")
	if err := json.Unmarshal([]byte(out), &res); code != exitOK || err != nil || res.Changed || res.Changes == nil || len(res.Changes) != 0 {
		t.Errorf("no-op json: exit %d, %v\n%s", code, err, out)
	}

	code, out, _ = h.run(t, "setup", "events", "--fifo", "-o", "json")
	if code != exitOK || !strings.Contains(out, `"dlq": "events-dlq.fifo"`) || !strings.Contains(out, `"fifo": true`) || !strings.Contains(out, `"maxReceiveCount": 40`) {
		t.Errorf("fifo: exit %d\n%s", code, out)
	}
	if code, out, errOut := h.run(t, "doctor", "orders", "events.fifo"); code != exitOK {
		t.Errorf("doctor after setup: exit %d, %s%s", code, out, errOut)
	}
}

// TestEveryCommandRejectsUnknownOutput checks -o for every command: an
// unknown format is a usage error, before anything is done.
func TestEveryCommandRejectsUnknownOutput(t *testing.T) {
	for _, c := range commands() {
		h := newHarness(t)
		args := append(strings.Fields(c.path), "x")
		switch c.path {
		case "policy preview", "version", "dlq ls", "console", "schedules ls":
			args = args[:len(args)-1]
		}
		for _, o := range [][]string{{"-o", "yaml"}, {"--output", "xml"}} {
			code, out, errOut := h.run(t, append(args, o...)...)
			if code != exitUsage || out != "" || !strings.Contains(errOut, "use text or json") {
				t.Errorf("%v %v: exit %d, stdout %q, stderr %q; want exit %d and the accepted formats", args, o, code, out, errOut, exitUsage)
			}
		}
		if n := h.fake.Requests(); len(n) != 0 {
			t.Errorf("%s with a bad -o made SQS calls: %v", c.path, n)
		}
	}
}

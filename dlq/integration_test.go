package dlq

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/sqsworker/sqsworker/harness/sqsmsg"
	"github.com/sqsworker/sqsworker/harness/testenv"
	"github.com/sqsworker/sqsworker/internal/deadletter"
	"github.com/sqsworker/sqsworker/internal/sqslimit"
	"github.com/sqsworker/sqsworker/queueref"
)

// These tests run against the local SQS emulator (fauxqs, started by
// localstack/start.sh) or whatever AWS_ENDPOINT_URL_SQS names. fauxqs has no
// message move tasks, so Redrive's manual path is the one exercised here.

func integrationContext(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

func TestIntegrationSetup(t *testing.T) {
	c := testenv.SQS(t)
	ctx := integrationContext(t)
	name := testenv.UniqueName("dlq-setup")
	opts := SetupOptions{Name: name, MaxReceiveCount: 60, Retention: 7 * 24 * time.Hour, VisibilityTimeout: 45 * time.Second}
	first, err := Setup(ctx, c, opts)
	if err != nil {
		t.Fatalf("Setup: %v", err)
	}
	if queueref.Name(first.QueueURL) != name || queueref.Name(first.DLQURL) != name+"-dlq" || first.MaxReceiveCount != 60 || first.FIFO {
		t.Errorf("Setup = %+v", first)
	}
	if len(first.Changes) != 2 || !first.Changes[0].Created() || !first.Changes[1].Created() {
		t.Errorf("first Setup changes = %v, want the two queues created", first.Changes)
	}
	attrs := func() (src, dlq map[string]string) {
		t.Helper()
		var err error
		if src, err = deadletter.GetAttributes(ctx, c, first.QueueURL, string(types.QueueAttributeNameAll)); err != nil {
			t.Fatal(err)
		}
		if dlq, err = deadletter.GetAttributes(ctx, c, first.DLQURL, string(types.QueueAttributeNameAll)); err != nil {
			t.Fatal(err)
		}
		return src, dlq
	}
	src1, dlq1 := attrs()

	// The report: a second setup without flags kept nothing of
	// the first. Now it changes nothing and says so.
	again, err := Setup(ctx, c, SetupOptions{Name: name})
	if err != nil {
		t.Fatalf("second Setup: %v", err)
	}
	if len(again.Changes) != 0 || again.MaxReceiveCount != 60 || again.Retention != 7*24*time.Hour || again.DLQRetention != sqslimit.MaxRetention {
		t.Errorf("second Setup = %+v, want no changes and the first settings", again)
	}
	src2, dlq2 := attrs()
	for _, k := range []string{deadletter.AttrRedrivePolicy, deadletter.AttrRetention, deadletter.AttrVisibilityTimeout} {
		if src1[k] != src2[k] {
			t.Errorf("queue %s changed from %q to %q", k, src1[k], src2[k])
		}
	}
	if dlq1[deadletter.AttrRetention] != dlq2[deadletter.AttrRetention] {
		t.Errorf("DLQ retention changed from %s to %s", dlq1[deadletter.AttrRetention], dlq2[deadletter.AttrRetention])
	}

	// Lowering is refused and changes nothing.
	if _, err := Setup(ctx, c, SetupOptions{Name: name, MaxReceiveCount: 5}); !errors.Is(err, ErrWouldLower) {
		t.Errorf("lowering maxReceiveCount: err = %v, want ErrWouldLower", err)
	}
	if src3, _ := attrs(); src3[deadletter.AttrRedrivePolicy] != src1[deadletter.AttrRedrivePolicy] {
		t.Errorf("refused Setup changed the RedrivePolicy to %s", src3[deadletter.AttrRedrivePolicy])
	}
	// Raising is a change, reported.
	raised, err := Setup(ctx, c, SetupOptions{Name: name, MaxReceiveCount: 80})
	if err != nil || len(raised.Changes) != 1 || raised.Changes[0].String() != "queue "+name+": maxReceiveCount 60 → 80" {
		t.Errorf("raising: %v, changes %v", err, raised.Changes)
	}
	if fs, err := Lint(ctx, c, again.QueueURL, LintOptions{Attempts: 4}); err != nil || len(fs) != 0 {
		t.Errorf("Lint on a fresh setup = %+v, %v", fs, err)
	}

	fifo, err := Setup(ctx, c, SetupOptions{Name: testenv.UniqueName("dlq-setup"), FIFO: true})
	if err != nil {
		t.Fatalf("FIFO Setup: %v", err)
	}
	if !fifo.FIFO || !strings.HasSuffix(fifo.QueueURL, ".fifo") || !strings.HasSuffix(fifo.DLQURL, "-dlq.fifo") || fifo.MaxReceiveCount != deadletter.DefaultFIFOMaxReceiveCount {
		t.Errorf("FIFO Setup = %+v", fifo)
	}
}

// fillDLQ moves n messages to the DLQ through the source, as the worker would.
func fillDLQ(t *testing.T, c *sqs.Client, target Target, n int, errText func(i int) string) {
	t.Helper()
	ctx := integrationContext(t)
	mover := mustMover(t, c, target)
	for i := range n {
		_, err := c.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(target.SourceURL), MessageBody: aws.String("job"), MessageAttributes: map[string]types.MessageAttributeValue{
			"n": {DataType: aws.String("Number"), StringValue: aws.String(strings.Repeat("1", i+1))},
		}})
		if err != nil {
			t.Fatal(err)
		}
		if err := mover.Move(ctx, sqsmsg.ReceiveOne(t, c, target.SourceURL), Provenance{Error: errText(i)}); err != nil {
			t.Fatal(err)
		}
	}
}

func TestIntegrationInspect(t *testing.T) {
	c := testenv.SQS(t)
	ctx := integrationContext(t)
	setup, err := Setup(ctx, c, SetupOptions{Name: testenv.UniqueName("dlq-inspect")})
	if err != nil {
		t.Fatal(err)
	}
	target := setup.Target()
	fillDLQ(t, c, target, 12, func(int) string { return "db down" })
	msgs, err := Inspect(ctx, c, target.DLQURL, InspectOptions{})
	if err != nil {
		t.Fatalf("Inspect: %v", err)
	}
	if len(msgs) != 12 {
		t.Fatalf("Inspect listed %d messages, want 12", len(msgs))
	}
	for _, m := range msgs {
		if !m.HasProvenance || m.Provenance.Error != "db down" || queueref.Name(m.Origin()) != queueref.Name(target.SourceURL) {
			t.Errorf("message %s provenance = %+v", m.ID, m.Provenance)
		}
		if _, ok := m.Attributes["n"]; !ok || len(m.Attributes) != 1 {
			t.Errorf("message %s attributes = %v", m.ID, keys(m.Attributes))
		}
	}
	// Released: all visible again at once.
	counts, err := Count(ctx, c, target.DLQURL)
	if err != nil || counts.Visible != 12 || counts.InFlight != 0 {
		t.Errorf("after Inspect: %+v, %v", counts, err)
	}
}

func TestIntegrationRedriveManual(t *testing.T) {
	c := testenv.SQS(t)
	ctx := integrationContext(t)
	setup, err := Setup(ctx, c, SetupOptions{Name: testenv.UniqueName("dlq-redrive")})
	if err != nil {
		t.Fatal(err)
	}
	target := setup.Target()
	fillDLQ(t, c, target, 14, func(i int) string {
		if i%2 == 0 {
			return "timeout"
		}
		return "bad input"
	})

	dry, err := Redrive(ctx, c, target, RedriveOptions{DryRun: true, Filter: Filter{ErrorContains: "timeout"}})
	if err != nil || dry.Matched != 7 || dry.Moved != 0 {
		t.Fatalf("dry run = %+v, %v", dry, err)
	}
	// Only the timeouts first, then the rest ("auto": fauxqs has no
	// move tasks, so both are manual).
	first, err := Redrive(ctx, c, target, RedriveOptions{Filter: Filter{ErrorContains: "timeout"}})
	if err != nil || first.Moved != 7 || first.Skipped != 7 {
		t.Fatalf("filtered redrive = %+v, %v", first, err)
	}
	rest, err := Redrive(ctx, c, target, RedriveOptions{})
	if err != nil {
		t.Fatalf("redrive: %v", err)
	}
	if rest.Method != "manual" || rest.Moved != 7 {
		t.Errorf("redrive = %+v", rest)
	}
	if counts, err := Count(ctx, c, target.DLQURL); err != nil || counts.Total() != 0 {
		t.Errorf("DLQ after redrive: %+v, %v", counts, err)
	}
	back, err := Inspect(ctx, c, target.SourceURL, InspectOptions{})
	if err != nil || len(back) != 14 {
		t.Fatalf("source holds %d messages, %v", len(back), err)
	}
	for _, m := range back {
		if m.HasProvenance {
			t.Errorf("redriven message %s still has provenance %+v", m.ID, m.Provenance)
		}
		if _, ok := m.Attributes["n"]; !ok {
			t.Errorf("redriven message %s lost its attribute", m.ID)
		}
	}
}

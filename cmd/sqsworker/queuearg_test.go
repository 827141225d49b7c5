package main

import (
	"bytes"
	"context"
	"encoding/json"
	"runtime/debug"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/sqsworker/sqsworker/harness/sqsfake"
	"github.com/sqsworker/sqsworker/sqstest"
	"github.com/sqsworker/sqsworker/sqstest/snstest"
)

// regions is a CLI whose clients reach one fake per region, as SQS keeps
// queues per region.
type regions struct {
	fakes map[string]*sqstest.Fake
}

func newRegions(t *testing.T, names ...string) *regions {
	r := &regions{fakes: map[string]*sqstest.Fake{}}
	for _, n := range names {
		r.fakes[n] = sqstest.For(t, func(o *sqstest.Options) { o.Region = n })
	}
	return r
}

func (r *regions) run(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errOut bytes.Buffer
	a := &app{
		stdin: strings.NewReader(""), stdout: &out, stderr: &errOut,
		newClient: func(_ context.Context, f awsFlags) (client, error) {
			return r.fakes[f.region], nil
		},
		newSNS:     func(_ context.Context, f awsFlags) (snsClient, error) { return snstest.For(t, r.fakes[f.region]), nil },
		isTerminal: func(any) bool { return false },
		now:        func() time.Time { return time.Date(2025, 3, 1, 14, 0, 0, 0, time.UTC) },
		buildInfo:  debug.ReadBuildInfo,
	}
	code := a.run(context.Background(), args)
	return code, out.String(), errOut.String()
}

// Issue 24, item 6: `dlq ls ARN` with an ARN of eu-west-1 and --region
// us-east-1 reported us-east-1's namesake. The ARN's region wins.
func TestQueueARNOfAnotherRegionIsThatRegionsQueue(t *testing.T) {
	r := newRegions(t, "us-east-1", "eu-west-1")
	r.fakes["us-east-1"].MustCreateQueueWithDLQ(t, "orders", 5, nil)
	_, euDLQ := r.fakes["eu-west-1"].MustCreateQueueWithDLQ(t, "orders", 5, nil)
	r.fakes["eu-west-1"].MustSend(t, euDLQ, "dead 1")
	r.fakes["eu-west-1"].MustSend(t, euDLQ, "dead 2")

	code, out, errOut := r.run(t, "dlq", "ls", "--region", "us-east-1", "-o", "json", "arn:aws:sqs:eu-west-1:000000000000:orders")
	var rows []lsRow
	if err := json.Unmarshal([]byte(out), &rows); code != exitOK || err != nil || len(rows) != 1 {
		t.Fatalf("exit %d, %v, stdout %q, stderr %q", code, err, out, errOut)
	}
	if rows[0].DLQURL != euDLQ || rows[0].Messages == nil || rows[0].Messages.Visible != 2 {
		t.Errorf("dlq ls = %+v; want eu-west-1's orders-dlq with its 2 messages", rows[0])
	}

	code, out, errOut = r.run(t, "doctor", "--region", "us-east-1", "--no-subscriptions", "-o", "json", "arn:aws:sqs:eu-west-1:000000000000:orders", "orders")
	var reports []doctorReport
	if err := json.Unmarshal([]byte(out), &reports); err != nil || len(reports) != 2 {
		t.Fatalf("doctor: exit %d, %v, stdout %q, stderr %q", code, err, out, errOut)
	}
	if !strings.Contains(reports[0].URL, "eu-west-1") || !strings.Contains(reports[1].URL, "us-east-1") {
		t.Errorf("doctor checked %s and %s; want eu-west-1's orders, then us-east-1's", reports[0].URL, reports[1].URL)
	}
}

func TestMalformedQueueArgumentIsAUsageError(t *testing.T) {
	for _, args := range [][]string{
		{"dlq", "ls", "my orders"},
		{"dlq", "peek", "arn:aws:sqs:us-east-1:orders"},
		{"dlq", "redrive", "https://sqs.us-east-1.amazonaws.com/"},
		{"dlq", "redrive", "orders", "--to", "not a queue"},
		{"doctor", "orders!"},
		{"setup", "orders queue"},
	} {
		h := newHarness(t)
		h.fake.MustCreateQueueWithDLQ(t, "orders", 5, nil)
		code, _, errOut := h.run(t, args...)
		if code != exitUsage || !strings.Contains(errOut, "such as") {
			t.Errorf("%q: exit %d, stderr %q; want exit 2 showing what a valid queue looks like", args, code, errOut)
		}
	}
}

// Issue 24, item 4: `dlq redrive q2 --to q2-dlq`, where q2-dlq is q2's
// dead-letter queue, moved messages from q2-dlq to q2-dlq for ever.
func TestRedriveToTheDeadLetterQueueItselfIsRefused(t *testing.T) {
	h := newHarness(t)
	_, dlqURL := h.fake.MustCreateQueueWithDLQ(t, "q2", 5, nil)
	h.fake.MustSend(t, dlqURL, "dead")
	for _, to := range []string{"q2-dlq", dlqURL, sqsfake.ARN(dlqURL)} {
		code, out, errOut := h.run(t, "dlq", "redrive", "q2", "--to", to)
		if code != exitUsage || !strings.Contains(errOut, "is dead-letter queue q2-dlq itself") || !strings.Contains(errOut, "Leave --to out") {
			t.Errorf("--to %s: exit %d, stdout %q, stderr %q; want exit 2 saying what to do", to, code, out, errOut)
		}
	}
	if n := len(h.fake.Messages(dlqURL)); n != 1 {
		t.Errorf("dead-letter queue holds %d messages, want its 1", n)
	}
}

// A queue whose RedrivePolicy names the queue itself: the dlq commands
// refuse it with exit 2, and doctor reports it with its fix.
func TestSelfRedrivingQueue(t *testing.T) {
	h := newHarness(t)
	url := h.fake.MustCreateQueue(t, "q2", nil)
	policy := `{"deadLetterTargetArn":"` + sqsfake.ARN(url) + `","maxReceiveCount":3}`
	if _, err := h.fake.SetQueueAttributes(t.Context(), &sqs.SetQueueAttributesInput{QueueUrl: aws.String(url), Attributes: map[string]string{"RedrivePolicy": policy}}); err != nil {
		t.Fatal(err)
	}
	code, _, errOut := h.run(t, "dlq", "redrive", "q2")
	if code != exitUsage || !strings.Contains(errOut, "names the queue itself") || !strings.Contains(errOut, "sqsworker setup q2") {
		t.Errorf("dlq redrive: exit %d, stderr %q; want exit 2 saying to run setup", code, errOut)
	}
	code, out, _ := h.run(t, "doctor", "--no-subscriptions", "q2")
	if code != exitProblems || !strings.Contains(out, "redrives-to-itself") || !strings.Contains(out, "sqsworker setup q2") {
		t.Errorf("doctor: exit %d, stdout %q; want the redrives-to-itself finding and its fix", code, out)
	}
	if code, _, errOut := h.run(t, "setup", "q2"); code != exitOK {
		t.Fatalf("setup q2: exit %d, %s", code, errOut)
	}
	if code, out, _ := h.run(t, "doctor", "--no-subscriptions", "q2"); strings.Contains(out, "redrives-to-itself") {
		t.Errorf("after setup, doctor still says: exit %d, %s", code, out)
	}
}

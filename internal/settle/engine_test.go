package settle_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/sqsworker/sqsworker/internal/deadletter"
	"github.com/sqsworker/sqsworker/internal/settle"
	"github.com/sqsworker/sqsworker/internal/sqserr"
	"github.com/sqsworker/sqsworker/retry"
)

// port is a settle.Port that records the calls the engine makes and
// answers each with what answer says (OK by default).
type port struct {
	calls  []string
	answer func(call string) settle.Outcome
	copier *deadletter.Copier
	final  *settle.Final
	dlqErr error
	queue  settle.Queue
	sent   *types.SendMessageBatchRequestEntry // the last Copy or Resend
}

func (p *port) do(j *settle.Job, call string) {
	p.calls = append(p.calls, call)
	out := settle.Outcome{OK: true}
	if p.answer != nil {
		out = p.answer(call)
	}
	j.Entry.Owner.Settled(&j.Entry, out)
}

func (p *port) Delete(j *settle.Job) { p.do(j, "delete") }
func (p *port) Change(j *settle.Job) { p.do(j, fmt.Sprintf("change %d", j.Entry.Timeout)) }
func (p *port) Copy(j *settle.Job)   { p.do(j, "copy") }
func (p *port) Resend(j *settle.Job) { p.sent = j.Entry.Send; p.do(j, "resend") }
func (p *port) DLQ() (*deadletter.Copier, error) {
	if p.copier == nil {
		return nil, p.dlqErr
	}
	return p.copier, nil
}
func (p *port) Queue() settle.Queue { return p.queue }
func (p *port) Done(_ *settle.Job, f settle.Final) {
	if p.final != nil {
		panic("Done told twice")
	}
	p.final = &f
}

func newJob(t *testing.T, e *settle.Engine, p *port) *settle.Job {
	t.Helper()
	c, err := deadletter.NewCopier(deadletter.Target{SourceURL: "https://sqs.example/1/src", DLQURL: "https://sqs.example/1/src-dlq", DLQARN: "arn:aws:sqs:us-east-1:1:src-dlq", MaxReceiveCount: 10})
	if err != nil {
		t.Fatal(err)
	}
	if p.copier == nil && p.dlqErr == nil {
		p.copier = c
	}
	j := new(settle.Job)
	e.Track(j, p, types.Message{MessageId: aws.String("m1"), Body: aws.String("b"), ReceiptHandle: aws.String("h1")}, "https://sqs.example/1/src", time.Now())
	return j
}

// The engine's plan for each fate, as the calls it makes through the Port
// and the settlement it reports.
func TestEnginePlans(t *testing.T) {
	copyFails := func(class sqserr.Class) func(string) settle.Outcome {
		return func(call string) settle.Outcome {
			if call == "copy" {
				return settle.Outcome{Class: class, Err: errors.New("copy refused")}
			}
			return settle.Outcome{OK: true}
		}
	}
	for _, tc := range []struct {
		name   string
		herr   error
		answer func(string) settle.Outcome
		noDLQ  bool
		calls  string
		result settle.Result
		reason string
	}{
		{name: "success", calls: "delete", result: settle.Deleted},
		{name: "retry", herr: errors.New("busy"), calls: "change 7", result: settle.Retrying},
		{name: "snooze", herr: retry.Snooze(3*time.Second, "wait"), calls: "resend delete", result: settle.Snoozed, reason: "relayed"},
		{name: "permanent", herr: retry.Permanent(errors.New("bad")), calls: "copy delete", result: settle.DeadLettered, reason: "permanent failure"},
		{name: "exhausted", herr: errors.New("busy"), calls: "copy delete", result: settle.DeadLettered, reason: "retries exhausted after 3 attempts"},
		{name: "copy refused for good", herr: retry.Permanent(errors.New("bad")), answer: copyFails(sqserr.Fatal), calls: "copy change 30", result: settle.Retrying, reason: "not dead-lettered: copy refused"},
		{name: "copy not confirmed at shutdown", herr: retry.Permanent(errors.New("bad")), answer: copyFails(sqserr.Canceled), calls: "copy change 30", result: settle.Retrying, reason: "not dead-lettered"},
		{name: "no DLQ", herr: retry.Permanent(errors.New("bad")), noDLQ: true, calls: "change 30", result: settle.Retrying, reason: "not dead-lettered: " + settle.ErrNoDLQ.Error()},
		{name: "delete refused", answer: func(string) settle.Outcome { return settle.Outcome{Class: sqserr.Fatal, Err: errors.New("denied")} }, calls: "delete", result: settle.Abandoned, reason: "denied"},
		{name: "handle stale", answer: func(string) settle.Outcome { return settle.Outcome{Class: sqserr.Stale, Err: errors.New("gone")} }, calls: "delete", result: settle.Lost, reason: "gone"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := &settle.Engine{Name: "test", Policy: fixedPolicy(2, 7*time.Second), Visibility: 30 * time.Second}
			p := &port{answer: tc.answer}
			if tc.noDLQ {
				p.dlqErr = settle.ErrNoDLQ
			}
			j := newJob(t, e, p)
			if tc.name == "exhausted" {
				j.Msg.Attempt = 3
			}
			e.Handled(context.Background(), j, tc.herr)
			if got := strings.Join(p.calls, " "); got != tc.calls {
				t.Errorf("calls %q, want %q", got, tc.calls)
			}
			if p.final == nil {
				t.Fatal("the Port was not told the settlement")
			}
			if p.final.Result != tc.result || !strings.Contains(p.final.Reason, tc.reason) {
				t.Errorf("settled %v %q, want %v with %q", p.final.Result, p.final.Reason, tc.result, tc.reason)
			}
			if !p.final.Called {
				t.Error("Final.Called is false after a call")
			}
		})
	}
}

// A DLQ copy that is not confirmed never leads to a delete, whatever the
// reason it failed.
func TestEngineNeverDeletesWithoutConfirmedCopy(t *testing.T) {
	for _, class := range []sqserr.Class{sqserr.Fatal, sqserr.Invalid, sqserr.Throttled, sqserr.Transient, sqserr.Canceled, sqserr.Stale} {
		e := &settle.Engine{Name: "test", Policy: fixedPolicy(2, time.Second), Visibility: 30 * time.Second}
		p := &port{answer: func(call string) settle.Outcome {
			if call == "copy" {
				return settle.Outcome{Class: class, Err: errors.New("no")}
			}
			return settle.Outcome{OK: true}
		}}
		j := newJob(t, e, p)
		e.Handled(context.Background(), j, retry.Permanent(errors.New("bad")))
		for _, c := range p.calls {
			if c == "delete" {
				t.Fatalf("%v: the source was deleted after its copy failed (calls %v)", class, p.calls)
			}
		}
		if p.final == nil || p.final.Result != settle.Retrying {
			t.Fatalf("%v: settled %+v, want Retrying", class, p.final)
		}
	}
}

// A retry delay ends within SQS's 12-hour limit counted from the receive,
// less the runtime's receive slack.
func TestEngineCapsTheDelayFromTheReceive(t *testing.T) {
	e := &settle.Engine{Name: "test", Policy: retry.PolicyFunc(func(int) (time.Duration, bool) { return 12 * time.Hour, true }), ReceiveSlack: 5 * time.Minute}
	p := &port{}
	j := newJob(t, e, p)
	j.Msg.ReceivedAt = time.Now().Add(-2 * time.Hour)
	e.Handled(context.Background(), j, errors.New("busy"))
	want := 12*time.Hour - 2*time.Hour - 5*time.Minute
	if d := p.final.Delay; d > want || d < want-time.Minute {
		t.Fatalf("delay %v, want about %v", d, want)
	}
}

// Without a known visibility timeout (the Lambda adapter), a message that
// cannot be dead-lettered now is left to come back by itself.
func TestEngineKeepsVisibilityWhenUnknown(t *testing.T) {
	e := &settle.Engine{Name: "test", Policy: fixedPolicy(2, time.Second)}
	p := &port{dlqErr: errors.New("no DLQ here")}
	j := newJob(t, e, p)
	e.Handled(context.Background(), j, retry.Permanent(errors.New("bad")))
	if got := strings.Join(p.calls, " "); got != fmt.Sprintf("change %d", settle.KeepVisibility) {
		t.Fatalf("calls %q, want one change that keeps the visibility", got)
	}
}

// Release and Drop: released with the reason; a drop makes no call.
func TestEngineReleaseAndDrop(t *testing.T) {
	e := &settle.Engine{Name: "test"}
	p := &port{}
	j := newJob(t, e, p)
	e.Release(j, "not started")
	if got := strings.Join(p.calls, " "); got != "change 0" || p.final.Result != settle.Released || p.final.Reason != "not started" {
		t.Fatalf("calls %q, settled %+v; want one change to 0, Released", got, p.final)
	}
	p = &port{}
	j = newJob(t, e, p)
	e.Drop(j, settle.Lost, "gone")
	if len(p.calls) != 0 || p.final.Result != settle.Lost || p.final.Called || p.final.GroupGoesOn() {
		t.Fatalf("calls %v, settled %+v; want no call, Lost", p.calls, p.final)
	}
}

// The handler's copy (Detach) shares nothing the engine reads: writing
// through every pointer, byte slice and map it reaches leaves the engine's
// message as received. A message without attributes costs no allocation.
func TestDetach(t *testing.T) {
	raw := types.Message{
		MessageId: aws.String("m1"), Body: aws.String("b"), ReceiptHandle: aws.String("h"),
		MD5OfBody: aws.String("md5"), MD5OfMessageAttributes: aws.String("md5a"),
		Attributes: map[string]string{"ApproximateReceiveCount": "2"},
		MessageAttributes: map[string]types.MessageAttributeValue{
			"s": {DataType: aws.String("String"), StringValue: aws.String("v")},
			"b": {DataType: aws.String("Binary"), BinaryValue: []byte("bytes")},
			"l": {DataType: aws.String("String"), StringListValues: []string{"x"}, BinaryListValues: [][]byte{[]byte("y")}},
		},
	}
	m := settle.Parse(raw, "q", time.Now())
	var id, body, handle string
	c := m.Raw
	attrs, mattrs := settle.Detach(&m, &c, &id, &body, &handle, true)
	// The copy's binary values share one array, each capped: appending to
	// one cannot write into another.
	_ = append(mattrs["b"].BinaryValue, "ZZZZZZ"...)
	_ = append(mattrs["l"].BinaryListValues[0], "ZZZZZZ"...)
	if got := string(mattrs["b"].BinaryValue) + string(mattrs["l"].BinaryListValues[0]); got != "bytesy" {
		t.Fatalf("the copy's binary values read %q after appends, want \"bytesy\"", got)
	}
	for _, v := range mattrs {
		if v.StringValue != nil {
			*v.StringValue = "forged"
		}
		*v.DataType = "forged"
		for i := range v.BinaryValue {
			v.BinaryValue[i] = 'X'
		}
		for i := range v.StringListValues {
			v.StringListValues[i] = "forged"
		}
		for _, b := range v.BinaryListValues {
			b[0] = 'X'
		}
	}
	attrs["ApproximateReceiveCount"] = "forged"
	*c.MD5OfBody, *c.MD5OfMessageAttributes = "forged", "forged"
	*c.MessageId, *c.Body, *c.ReceiptHandle = "forged", "forged", "forged"
	if c.MessageId != &id || c.Body != &body || c.ReceiptHandle != &handle {
		t.Error("the copy's Raw does not point into the copy")
	}
	if got := fmt.Sprint(*m.MessageAttributes["s"].StringValue, *m.MessageAttributes["s"].DataType, string(m.MessageAttributes["b"].BinaryValue),
		m.MessageAttributes["l"].StringListValues, string(m.MessageAttributes["l"].BinaryListValues[0]), m.Attributes["ApproximateReceiveCount"],
		*m.Raw.MD5OfBody, *m.Raw.MD5OfMessageAttributes, *m.Raw.MessageId); strings.Contains(got, "forged") || strings.Contains(got, "X") {
		t.Fatalf("the engine's message shows the handler's writes: %s", got)
	}

	plain := settle.Parse(types.Message{MessageId: aws.String("m2"), Body: aws.String("b"), ReceiptHandle: aws.String("h"), Attributes: map[string]string{"SentTimestamp": "1"}}, "q", time.Now())
	allocs := testing.AllocsPerRun(100, func() {
		c := plain.Raw
		settle.Detach(&plain, &c, &id, &body, &handle, false)
	})
	if allocs != 0 {
		t.Fatalf("Detach of a message without attributes allocates %v times, want 0", allocs)
	}
}

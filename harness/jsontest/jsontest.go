// Package jsontest holds the bodies that the worker's and the Lambda
// adapter's tests of worker.JSON share, and the check of their outcome, so
// that both runtimes meet the same input and must agree on its fate.
package jsontest

import (
	"strings"
	"testing"

	"github.com/sqsworker/sqsworker/dlq"
	"github.com/sqsworker/sqsworker/sqstest"
)

// Job is the job type the tests decode.
type Job struct {
	OrderID string `json:"order_id"`
	Qty     int    `json:"qty"`
}

// Case is one message body and its expected fate under strict decoding:
// Reason "" means the handler gets it; otherwise it goes to the
// dead-letter queue with a reason containing Reason. UnknownField marks the
// cases JSONOptions.AllowUnknownFields lets through.
type Case struct {
	Body         string
	Reason       string
	UnknownField bool
}

// Cases are the bodies the tests send.
var Cases = []Case{
	{Body: `{"order_id":"A-1","qty":2}`},
	{Body: ` {"order_id":"A-2"} `},
	{Body: `{"order_id":"A-3","qty":1,"colour":"red"}`, Reason: `json: unknown field "colour"`, UnknownField: true},
	{Body: `{"order_id":"A-4","qty":"two"}`, Reason: "cannot unmarshal string into Go struct field Job.qty of type int"},
	{Body: `{"order_id":"A-5"`, Reason: "unexpected EOF"},
	{Body: `{"order_id":"A-6"} {"order_id":"A-7"}`, Reason: "unexpected data after the JSON value"},
	{Body: `[1,2]`, Reason: "cannot unmarshal array into Go value of type jsontest.Job"},
	{Body: "   ", Reason: "the body is empty"},
	{Body: ` null `, Reason: "the body is JSON null"},
}

// Check compares a run over Cases with what it should have done: handled
// is what the handler got, f holds the source queue src and its
// dead-letter queue dlqURL afterwards.
func Check(t *testing.T, allow bool, handled []Job, f *sqstest.Fake, src, dlqURL string) {
	t.Helper()
	reasons := map[string]string{}
	for _, m := range f.Messages(dlqURL) {
		p, _ := dlq.ParseProvenance(m.Attributes)
		reasons[m.Body] = p.Error
		if p.Attempt != 1 {
			t.Errorf("%s dead-lettered after attempt %d, want 1 (a permanent failure)", m.Body, p.Attempt)
		}
	}
	want := 0
	for _, c := range Cases {
		reason := c.Reason
		if allow && c.UnknownField {
			reason = ""
		}
		r, dead := reasons[c.Body]
		switch {
		case reason == "":
			want++
			if dead {
				t.Errorf("AllowUnknownFields %v: %s dead-lettered: %s", allow, c.Body, r)
			}
		case !dead || !strings.Contains(r, reason) || !strings.Contains(r, "is not a valid jsontest.Job"):
			t.Errorf("AllowUnknownFields %v: %s: DLQ reason %q, want one containing %q", allow, c.Body, r, reason)
		}
	}
	if len(handled) != want {
		t.Errorf("AllowUnknownFields %v: handler ran %d times (%v), want %d", allow, len(handled), handled, want)
	}
	if n := len(f.Messages(src)); n != 0 {
		t.Errorf("source still holds %d messages", n)
	}
}

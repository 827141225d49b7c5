package settle_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/sqsworker/sqsworker/internal/schedule"
	"github.com/sqsworker/sqsworker/internal/settle"
	"github.com/sqsworker/sqsworker/internal/sqserr"
)

// queuePort is a port whose queue's redrive policy could not be read, so a
// job not due yet is re-sent as a fresh copy to wait (never hidden).
type queuePort struct{ *port }

func (p queuePort) Queue() settle.Queue { return settle.Queue{RedriveUnknown: true} }

// A delayed job (a due time beyond SQS's 15 minutes) is re-sent as a fresh
// copy, and its message deleted only once SQS confirmed the copy. A re-send
// that failed, whatever the reason, leaves the message in the queue to be
// tried again after the visibility timeout: deleted anyway, the job would
// be gone (issue 37's "three ways to lose a job": nothing covered this path
// under a failing re-send).
func TestEngineDeletesADelayedJobOnlyAfterItsCopyIsConfirmed(t *testing.T) {
	for _, tc := range []struct {
		name   string
		resend settle.Outcome
		calls  string
		result settle.Result
	}{
		{"copy confirmed", settle.Outcome{OK: true}, "resend delete", settle.Delayed},
		{"copy refused", settle.Outcome{Class: sqserr.Fatal, Err: errors.New("access denied")}, "resend change 30", settle.Delayed},
		{"copy throttled until the attempts ran out", settle.Outcome{Class: sqserr.Throttled, Err: errors.New("throttled")}, "resend change 30", settle.Delayed},
		{"shutdown before the copy was confirmed", settle.Outcome{Class: sqserr.Canceled, Err: context.Canceled}, "resend change 30", settle.Delayed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := &settle.Engine{Name: "test", Policy: fixedPolicy(2, time.Second), Visibility: 30 * time.Second}
			p := queuePort{&port{answer: func(call string) settle.Outcome {
				if call == "resend" {
					return tc.resend
				}
				return settle.Outcome{OK: true}
			}}}
			now := time.Now()
			j := new(settle.Job)
			e.Track(j, p, types.Message{
				MessageId: aws.String("m1"), Body: aws.String("b"), ReceiptHandle: aws.String("h1"),
				MessageAttributes: map[string]types.MessageAttributeValue{schedule.Attribute: schedule.Value(now.Add(2 * time.Hour))},
			}, "https://sqs.example/1/src", now)
			if wait := e.Begin(context.Background(), j, now); !wait {
				t.Fatal("a job due in 2 hours was to run now")
			}
			e.Wait(j)
			if got := strings.Join(p.calls, " "); got != tc.calls {
				t.Errorf("calls %q, want %q", got, tc.calls)
			}
			if p.final == nil {
				t.Fatal("the Port was not told the settlement")
			}
			if p.final.Result != tc.result || !p.final.Called {
				t.Errorf("settled %+v, want %v", *p.final, tc.result)
			}
		})
	}
}

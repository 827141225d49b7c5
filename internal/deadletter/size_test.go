package deadletter

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/sqsworker/sqsworker/harness/sqsmsg"
	"github.com/sqsworker/sqsworker/sqstest"
)

// memOffloader keeps offloaded bodies in memory, as a test Offloader.
type memOffloader struct {
	mu     sync.Mutex
	bodies map[string]string
	err    error
}

func (o *memOffloader) OffloadBody(_ context.Context, body string) (string, map[string]types.MessageAttributeValue, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.err != nil {
		return "", nil, o.err
	}
	if o.bodies == nil {
		o.bodies = map[string]string{}
	}
	key := fmt.Sprint("obj", len(o.bodies))
	o.bodies[key] = body
	return "pointer:" + key, map[string]types.MessageAttributeValue{
		"PayloadSize": {DataType: aws.String("Number"), StringValue: aws.String(fmt.Sprint(len(body)))},
	}, nil
}

// smallDLQ makes a pair whose DLQ takes 256 KiB while its source takes
// 1 MiB (as SQS allows since 2025), with a 300 KiB message received from
// the source.
func smallDLQ(t *testing.T) (*sqstest.Fake, Target, types.Message) {
	t.Helper()
	f := sqstest.For(t)
	src, dlq := f.MustCreateQueueWithDLQ(t, "orders", 5, nil)
	setAttrs(t, f, dlq, map[string]string{"MaximumMessageSize": "262144"})
	f.MustSend(t, src, strings.Repeat("x", 300<<10), sqsmsg.WithAttributes(sqsmsg.UserAttributes(2)))
	target, err := Discover(context.Background(), f, src)
	if err != nil {
		t.Fatal(err)
	}
	if target.MaxMessageSize != 256<<10 || target.SourceMaxMessageSize != 1<<20 {
		t.Fatalf("Discover: MaxMessageSize %d, SourceMaxMessageSize %d; want 262144 and 1048576", target.MaxMessageSize, target.SourceMaxMessageSize)
	}
	return f, target, sqsmsg.ReceiveOne(t, f, src)
}

var permanent = Provenance{Error: "permanent: invoice 42 has no customer", Handler: "billing"}

// A copy too large for the DLQ goes through the offloader: it carries a
// pointer, the marker and its full provenance, and the DLQ takes it.
func TestCopierOffloadsACopyTooLargeForTheDLQ(t *testing.T) {
	f, target, msg := smallDLQ(t)
	off := &memOffloader{}
	log, buf := logBuffer()
	c, err := NewCopier(target, func(o *Options) { o.Offloader = off; o.Logger = log })
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(buf.String(), "level=WARN") {
		t.Errorf("NewCopier warned although an offloader handles large copies:\n%s", buf)
	}
	in, err := c.Input(msg, permanent)
	if err != nil {
		t.Fatalf("Input: %v", err)
	}
	if got := aws.ToString(in.MessageBody); got != "pointer:obj0" || off.bodies["obj0"] != aws.ToString(msg.Body) {
		t.Fatalf("copy body %q (stored %d bytes); want the pointer to the original body", got, len(off.bodies["obj0"]))
	}
	if _, ok := in.MessageAttributes["PayloadSize"]; !ok || in.MessageAttributes["u0"].StringValue == nil {
		t.Errorf("copy attributes %v; want the user's and the offloader's marker", in.MessageAttributes)
	}
	p, ok := ParseProvenance(in.MessageAttributes)
	if !ok || p.Error != permanent.Error || p.Handler != "billing" {
		t.Errorf("provenance %+v, %v; want the full reason", p, ok)
	}
	if _, err := f.SendMessage(context.Background(), in); err != nil {
		t.Fatalf("the DLQ refused the offloaded copy: %v", err)
	}
}

// Without an offloader, a copy too large for the DLQ is not built: the
// error wraps ErrTooLarge and carries the reason and the fix, an ERROR log
// keeps the reason with the message ID, and NewCopier warned of the
// mismatch.
func TestCopierRefusesACopyTooLargeWithoutOffloader(t *testing.T) {
	_, target, msg := smallDLQ(t)
	log, buf := logBuffer()
	c, err := NewCopier(target, func(o *Options) { o.Logger = log })
	if err != nil {
		t.Fatal(err)
	}
	if w := buf.String(); !strings.Contains(w, "level=WARN") || !strings.Contains(w, CodeDLQMaxMessageSizeSmaller) || !strings.Contains(w, "256 KiB") {
		t.Errorf("NewCopier's log %q; want a warning about the 256 KiB dead-letter queue", w)
	}
	buf.Reset()
	_, err = c.Input(msg, permanent)
	if !errors.Is(err, ErrTooLarge) {
		t.Fatalf("Input: %v; want ErrTooLarge", err)
	}
	for _, want := range []string{permanent.Error, "MaximumMessageSize", "offloader", aws.ToString(msg.MessageId)} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
	logged := buf.String()
	for _, want := range []string{"level=ERROR", permanent.Error, aws.ToString(msg.MessageId)} {
		if !strings.Contains(logged, want) {
			t.Errorf("log %q lacks %q", logged, want)
		}
	}

	// An offloader that fails leaves the same fallback, with its error.
	c, _ = NewCopier(target, func(o *Options) {
		o.Logger = log
		o.Offloader = &memOffloader{err: errors.New("bucket unreachable")}
	})
	if _, err := c.Input(msg, permanent); !errors.Is(err, ErrTooLarge) || !strings.Contains(err.Error(), "bucket unreachable") {
		t.Errorf("Input with a failing offloader: %v; want ErrTooLarge naming the offloader's failure", err)
	}
}

// Move of a message too large for the DLQ deletes nothing.
func TestMoveTooLargeKeepsTheMessage(t *testing.T) {
	f, target, msg := smallDLQ(t)
	log, _ := logBuffer()
	m, err := NewMover(f, target, func(o *Options) { o.Logger = log })
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Move(context.Background(), msg, permanent); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("Move: %v; want ErrTooLarge", err)
	}
	if n := len(f.Messages(target.SourceURL)); n != 1 {
		t.Errorf("%d messages in the source; want the message kept", n)
	}
	if n := len(f.Messages(target.DLQURL)); n != 0 {
		t.Errorf("%d messages in the DLQ; want none", n)
	}
}

// A message that fits only without its full provenance is offloaded when
// an offloader is set, so the reason is kept whole.
func TestCopierOffloadsToKeepTheFullReason(t *testing.T) {
	f := sqstest.For(t)
	src, dlq := f.MustCreateQueueWithDLQ(t, "orders", 5, nil)
	setAttrs(t, f, dlq, map[string]string{"MaximumMessageSize": "262144"})
	f.MustSend(t, src, strings.Repeat("x", 256<<10-100))
	target, err := Discover(context.Background(), f, src)
	if err != nil {
		t.Fatal(err)
	}
	msg := sqsmsg.ReceiveOne(t, f, src)
	long := Provenance{Error: strings.Repeat("why ", 200)}
	log, _ := logBuffer()
	c, _ := NewCopier(target, func(o *Options) { o.Logger = log; o.Offloader = &memOffloader{} })
	in, err := c.Input(msg, long)
	if err != nil {
		t.Fatal(err)
	}
	if p, _ := ParseProvenance(in.MessageAttributes); p.Error != long.Error {
		t.Errorf("reason kept as %d bytes, want all %d", len(p.Error), len(long.Error))
	}
	if _, err := f.SendMessage(context.Background(), in); err != nil {
		t.Fatalf("the DLQ refused the copy: %v", err)
	}
}

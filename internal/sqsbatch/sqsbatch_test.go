package sqsbatch

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/aws/smithy-go"

	"github.com/sqsworker/sqsworker/internal/sqserr"
	"github.com/sqsworker/sqsworker/internal/sqslimit"
)

// call is one request the fake client got.
type call struct {
	at      time.Time
	ids     []string
	bodies  []string
	retries int // the SDK's RetryMaxAttempts after the call's options
}

// reply is what the fake says to one call: the error of the whole call,
// or, per entry Id, "ok", a failure code, or "" to leave it out.
type reply struct {
	err     error
	entries map[string]string
}

// fake is an SQS client whose batch answers a script decides.
type fake struct {
	mu     sync.Mutex
	calls  []call
	script func(n int, c call) reply // n counts calls from 0
}

func (f *fake) record(ids, bodies []string, optFns []func(*sqs.Options)) (reply, call) {
	o := sqs.Options{RetryMaxAttempts: 3}
	for _, fn := range optFns {
		fn(&o)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	c := call{at: time.Now(), ids: ids, bodies: bodies, retries: o.RetryMaxAttempts}
	n := len(f.calls)
	f.calls = append(f.calls, c)
	if f.script == nil {
		return reply{}, c
	}
	return f.script(n, c), c
}

func (f *fake) Calls() []call {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]call(nil), f.calls...)
}

// results turns an reply into a response's lists: every Id "ok" unless
// the reply says otherwise.
func results(a reply, ids []string) (ok []string, failed []types.BatchResultErrorEntry) {
	for _, id := range ids {
		what, set := a.entries[id]
		switch {
		case !set || what == "ok":
			ok = append(ok, id)
		case what == "":
		default:
			sender := !strings.Contains(what, "Internal") && !strings.Contains(what, "Throttl")
			failed = append(failed, types.BatchResultErrorEntry{Id: aws.String(id), Code: aws.String(what), Message: aws.String("scripted"), SenderFault: sender})
		}
	}
	return ok, failed
}

func (f *fake) SendMessageBatch(ctx context.Context, in *sqs.SendMessageBatchInput, optFns ...func(*sqs.Options)) (*sqs.SendMessageBatchOutput, error) {
	var ids, bodies []string
	for _, e := range in.Entries {
		ids, bodies = append(ids, aws.ToString(e.Id)), append(bodies, aws.ToString(e.MessageBody))
	}
	a, _ := f.record(ids, bodies, optFns)
	if a.err != nil {
		return nil, a.err
	}
	ok, failed := results(a, ids)
	out := &sqs.SendMessageBatchOutput{Failed: failed}
	for _, id := range ok {
		out.Successful = append(out.Successful, types.SendMessageBatchResultEntry{Id: aws.String(id), MessageId: aws.String("msg-" + bodies[atoi(id)])})
	}
	return out, nil
}

func (f *fake) DeleteMessageBatch(ctx context.Context, in *sqs.DeleteMessageBatchInput, optFns ...func(*sqs.Options)) (*sqs.DeleteMessageBatchOutput, error) {
	var ids, handles []string
	for _, e := range in.Entries {
		ids, handles = append(ids, aws.ToString(e.Id)), append(handles, aws.ToString(e.ReceiptHandle))
	}
	a, _ := f.record(ids, handles, optFns)
	if a.err != nil {
		return nil, a.err
	}
	ok, failed := results(a, ids)
	out := &sqs.DeleteMessageBatchOutput{Failed: failed}
	// In reverse order: the layer maps by Id, not by position.
	for i := len(ok) - 1; i >= 0; i-- {
		out.Successful = append(out.Successful, types.DeleteMessageBatchResultEntry{Id: aws.String(ok[i])})
	}
	return out, nil
}

func (f *fake) ChangeMessageVisibilityBatch(ctx context.Context, in *sqs.ChangeMessageVisibilityBatchInput, optFns ...func(*sqs.Options)) (*sqs.ChangeMessageVisibilityBatchOutput, error) {
	var ids, handles []string
	for _, e := range in.Entries {
		ids, handles = append(ids, aws.ToString(e.Id)), append(handles, aws.ToString(e.ReceiptHandle)+"@"+strconv.Itoa(int(e.VisibilityTimeout)))
	}
	a, _ := f.record(ids, handles, optFns)
	if a.err != nil {
		return nil, a.err
	}
	ok, failed := results(a, ids)
	out := &sqs.ChangeMessageVisibilityBatchOutput{Failed: failed}
	for _, id := range ok {
		out.Successful = append(out.Successful, types.ChangeMessageVisibilityBatchResultEntry{Id: aws.String(id)})
	}
	return out, nil
}

func atoi(s string) int { n, _ := strconv.Atoi(s); return n }

func sends(bodies ...string) []Entry {
	out := make([]Entry, len(bodies))
	for i, b := range bodies {
		out[i].Send.MessageBody = aws.String(b)
	}
	return out
}

func handles(n int) []Entry {
	out := make([]Entry, n)
	for i := range out {
		out[i].Handle = "h" + strconv.Itoa(i)
	}
	return out
}

func apiError(code string, fault smithy.ErrorFault) error {
	return &smithy.GenericAPIError{Code: code, Message: "scripted", Fault: fault}
}

// Entries go out ten to a call, with Ids distinct within each call, and the
// SDK's retries off on every call.
func TestRunCutsCallsOfTen(t *testing.T) {
	f := &fake{}
	res := NewDeleter(f, "q").Run(t.Context(), handles(25), Policy{})
	calls := f.Calls()
	if len(calls) != 3 || len(calls[0].ids) != 10 || len(calls[1].ids) != 10 || len(calls[2].ids) != 5 {
		t.Fatalf("calls carried %v; want 10, 10, 5", calls)
	}
	for i, c := range calls {
		seen := map[string]bool{}
		for _, id := range c.ids {
			if seen[id] {
				t.Errorf("call %d repeats Id %q", i, id)
			}
			seen[id] = true
		}
		if c.retries != 1 {
			t.Errorf("call %d: the SDK may retry it %d times; want its retries off", i, c.retries)
		}
	}
	if calls[2].bodies[4] != "h24" {
		t.Errorf("last call's last handle %q, want h24 (in order)", calls[2].bodies[4])
	}
	for i, r := range res {
		if !r.OK || r.Attempts != 1 {
			t.Errorf("entry %d: %+v; want confirmed after one call", i, r)
		}
	}
}

// Sends are cut also by SQS's batch payload limit, and MaxBatch.
func TestRunCutsSendsByPayload(t *testing.T) {
	big := strings.Repeat("x", 400<<10)
	f := &fake{}
	NewSender(f, "q").Run(t.Context(), sends(big, big, big, big, big), Policy{})
	var sizes []int
	for _, c := range f.Calls() {
		sizes = append(sizes, len(c.ids))
		total := 0
		for _, b := range c.bodies {
			total += len(b)
		}
		if total > sqslimit.MaxMessageSize {
			t.Errorf("a call carried %d bytes, over %d", total, sqslimit.MaxMessageSize)
		}
	}
	if len(sizes) != 3 || sizes[0] != 2 || sizes[1] != 2 || sizes[2] != 1 {
		t.Errorf("calls carried %v entries; want 2, 2, 1", sizes)
	}
	f = &fake{}
	NewSender(f, "q").Run(t.Context(), sends("a", "b", "c", "d", "e"), Policy{MaxBatch: 2})
	if n := len(f.Calls()); n != 3 {
		t.Errorf("MaxBatch 2: %d calls for 5 entries, want 3", n)
	}
}

// Results are mapped back to their entries by Id, whatever the order of
// the response; a send's MessageID goes to its own entry.
func TestOnceMapsResultsById(t *testing.T) {
	f := &fake{script: func(int, call) reply { return reply{entries: map[string]string{"1": "ReceiptHandleIsInvalid"}} }}
	res, err := NewDeleter(f, "q").Once(t.Context(), handles(3), nil)
	if err != nil {
		t.Fatal(err)
	}
	if !res[0].OK || res[1].OK || !res[2].OK {
		t.Fatalf("results %+v; want 0 and 2 confirmed, 1 failed", res)
	}
	var api smithy.APIError
	if res[1].Class != sqserr.Stale || !errors.As(res[1].Err, &api) || api.ErrorCode() != "ReceiptHandleIsInvalid" || res[1].Whole {
		t.Errorf("failed entry: %+v; want its own stale API error", res[1])
	}
	sres, _ := NewSender(&fake{}, "q").Once(t.Context(), sends("a", "b"), nil)
	if sres[0].MessageID != "msg-a" || sres[1].MessageID != "msg-b" {
		t.Errorf("message IDs %q, %q; want each entry's own", sres[0].MessageID, sres[1].MessageID)
	}
}

// An entry the response leaves out is failed (retryable), never done; Run
// sends it again.
func TestMissingEntryIsFailed(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		leaveOut := func(n int, _ call) reply {
			if n == 0 {
				return reply{entries: map[string]string{"2": ""}}
			}
			return reply{}
		}
		res, err := NewChanger(&fake{script: leaveOut}, "q").Once(t.Context(), handles(3), nil)
		if err != nil || res[2].OK || !errors.Is(res[2].Err, ErrNoResult) || !res[2].Class.Retryable() {
			t.Fatalf("left-out entry: %+v, %v; want failed with ErrNoResult, retryable", res[2], err)
		}
		f := &fake{script: leaveOut}
		res = NewChanger(f, "q").Run(t.Context(), handles(3), Policy{})
		calls := f.Calls()
		if !res[2].OK || res[2].Attempts != 2 || len(calls) != 2 || len(calls[1].ids) != 1 || calls[1].bodies[0] != "h2@0" {
			t.Errorf("Run: %+v after calls %v; want the left-out entry alone sent again and confirmed", res, calls)
		}
	})
}

// Ids the response makes up (out of range, not the Id sent, absent) are
// ignored: the entries they do not name are failed.
func TestUnknownIdsAreIgnored(t *testing.T) {
	f := &oddIDs{}
	res, err := NewDeleter(f, "q").Once(t.Context(), handles(2), nil)
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range res {
		if r.OK || !errors.Is(r.Err, ErrNoResult) {
			t.Errorf("entry %d: %+v; want failed, no result", i, r)
		}
	}
}

type oddIDs struct{}

func (oddIDs) DeleteMessageBatch(ctx context.Context, in *sqs.DeleteMessageBatchInput, optFns ...func(*sqs.Options)) (*sqs.DeleteMessageBatchOutput, error) {
	return &sqs.DeleteMessageBatchOutput{Successful: []types.DeleteMessageBatchResultEntry{{Id: aws.String("7")}, {Id: aws.String("01")}, {Id: nil}, {Id: aws.String("-1")}}}, nil
}

// The retry rule: what sqserr calls retryable is sent again after
// Backoff, what it does not ends at once, and MaxAttempts bounds the calls.
func TestRetryRule(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := &fake{script: func(n int, c call) reply {
			switch n {
			case 0:
				return reply{err: apiError("RequestThrottled", smithy.FaultClient)}
			case 1:
				return reply{entries: map[string]string{"0": "InternalError", "1": "AccessDenied", "2": "InternalError"}}
			}
			return reply{entries: map[string]string{"0": "InternalError"}}
		}}
		res := NewDeleter(f, "q").Run(t.Context(), handles(3), Policy{MaxAttempts: 4})
		calls := f.Calls()
		if len(calls) != 4 {
			t.Fatalf("%d calls, want 4", len(calls))
		}
		if w := calls[1].at.Sub(calls[0].at); w < 50*time.Millisecond || w > 100*time.Millisecond {
			t.Errorf("first retry after %v, want 50-100 ms", w)
		}
		if w := calls[2].at.Sub(calls[1].at); w < 100*time.Millisecond || w > 200*time.Millisecond {
			t.Errorf("second retry after %v, want 100-200 ms", w)
		}
		if got := len(calls[2].ids); got != 2 {
			t.Errorf("second retry carried %d entries; want the two retryable ones", got)
		}
		if r := res[1]; r.OK || r.Class != sqserr.Fatal || r.Attempts != 2 {
			t.Errorf("AccessDenied entry: %+v; want fatal after 2 calls", r)
		}
		if r := res[2]; !r.OK || r.Attempts != 3 {
			t.Errorf("entry 2: %+v; want confirmed on the third call", r)
		}
		if r := res[0]; r.OK || r.Class != sqserr.Transient || r.Attempts != 4 {
			t.Errorf("entry 0: %+v; want failed after MaxAttempts (4) calls", r)
		}

		// A whole call refused for good is not retried.
		f = &fake{script: func(int, call) reply { return reply{err: apiError("AccessDenied", smithy.FaultClient)} }}
		res = NewDeleter(f, "q").Run(t.Context(), handles(2), Policy{})
		if len(f.Calls()) != 1 || res[0].Class != sqserr.Fatal || !res[0].Whole {
			t.Errorf("AccessDenied call: %d calls, %+v; want one call, fatal, whole", len(f.Calls()), res[0])
		}
	})
}

// Every request reaches OnCall once, retries included, with its round.
func TestEveryCallCounted(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := &fake{script: func(n int, c call) reply {
			if n < 2 {
				return reply{err: apiError("InternalError", smithy.FaultServer)}
			}
			return reply{}
		}}
		var mu sync.Mutex
		var seen []Call
		res := NewSender(f, "q").Run(t.Context(), sends("a", "bb"), Policy{OnCall: func(c Call) {
			mu.Lock()
			seen = append(seen, c)
			mu.Unlock()
		}})
		if len(seen) != len(f.Calls()) || len(seen) != 3 {
			t.Fatalf("OnCall saw %d calls, the client got %d; want 3 each", len(seen), len(f.Calls()))
		}
		for i, c := range seen {
			if c.Attempt != i+1 || c.Entries != 2 || c.Payload != 3 || c.Op != "SendMessageBatch" || (c.Err == nil) != (i == 2) {
				t.Errorf("call %d: %+v", i, c)
			}
		}
		if !res[0].OK || res[0].Attempts != 3 {
			t.Errorf("result %+v; want confirmed after 3 calls", res[0])
		}
	})
}

// ctx's end stops the retries: the entry says why it was not sent again.
// With Detach a call in flight is not cancelled by ctx's end.
func TestContextEndsRetries(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancelCause(t.Context())
		stop := errors.New("closing")
		f := &fake{script: func(n int, c call) reply {
			cancel(stop)
			return reply{err: apiError("InternalError", smithy.FaultServer)}
		}}
		res := NewDeleter(f, "q").Run(ctx, handles(1), Policy{Detach: true})
		if len(f.Calls()) != 1 || res[0].OK || !errors.Is(res[0].Err, stop) || res[0].Class != sqserr.Canceled {
			t.Errorf("%d calls, %+v; want one call and the cause in the error", len(f.Calls()), res[0])
		}
		if !strings.Contains(res[0].Err.Error(), "InternalError") {
			t.Errorf("error %q does not keep the last call's", res[0].Err)
		}

		hung := &hangs{}
		ctx, cancel2 := context.WithCancel(t.Context())
		go func() { time.Sleep(time.Second); cancel2() }()
		res = NewDeleter(hung, "q").Run(ctx, handles(1), Policy{Detach: true, CallTimeout: 5 * time.Second})
		if hung.ended != 5*time.Second || res[0].OK {
			t.Errorf("detached call ended after %v (%+v); want its own timeout (5s), not ctx's end, and not done", hung.ended, res[0])
		}
		ctx, cancel3 := context.WithCancel(t.Context())
		go func() { time.Sleep(time.Second); cancel3() }()
		res = NewDeleter(hung, "q").Run(ctx, handles(1), Policy{CallTimeout: 5 * time.Second})
		if hung.ended != time.Second || res[0].Class != sqserr.Canceled {
			t.Errorf("attached call ended after %v (%+v); want with ctx, canceled", hung.ended, res[0])
		}
	})
}

// hangs answers when its call's context ends, recording after how long.
type hangs struct{ ended time.Duration }

func (h *hangs) DeleteMessageBatch(ctx context.Context, in *sqs.DeleteMessageBatchInput, optFns ...func(*sqs.Options)) (*sqs.DeleteMessageBatchOutput, error) {
	start := time.Now()
	<-ctx.Done()
	h.ended = time.Since(start)
	return nil, ctx.Err()
}

// A Gate that refuses ends the entries unsent, with its error.
func TestGateRefusal(t *testing.T) {
	f := &fake{}
	refused := errors.New("rate limit wait interrupted")
	gates := 0
	res := NewDeleter(f, "q").Run(t.Context(), handles(15), Policy{Gate: func(ctx context.Context, n int) (func(), error) {
		gates++
		if gates == 2 {
			return nil, refused
		}
		return func() {}, nil
	}})
	if len(f.Calls()) != 1 {
		t.Fatalf("%d calls, want 1", len(f.Calls()))
	}
	for i, r := range res {
		if i < 10 && !r.OK {
			t.Errorf("entry %d: %+v, want sent", i, r)
		}
		if i >= 10 && (r.OK || r.Attempts != 0 || !errors.Is(r.Err, refused)) {
			t.Errorf("entry %d: %+v, want unsent with the gate's error", i, r)
		}
	}
}

// Once refuses an empty call or one over ten entries without calling.
func TestOnceBounds(t *testing.T) {
	f := &fake{}
	if _, err := NewDeleter(f, "q").Once(t.Context(), nil, nil); err == nil {
		t.Error("empty call accepted")
	}
	if _, err := NewDeleter(f, "q").Once(t.Context(), handles(11), nil); err == nil {
		t.Error("11 entries accepted")
	}
	if n := len(f.Calls()); n != 0 {
		t.Errorf("%d calls made", n)
	}
}

// The layer reads Ids from SQS's responses: whatever they hold, it never
// panics, confirms only the entry whose Id the response names exactly, and
// gives every other entry an error.
func FuzzResponseIds(f *testing.F) {
	f.Add(3, "0,1,2", "")
	f.Add(10, "9,01,x", "3,3,-1")
	f.Add(1, "", "0")
	f.Fuzz(func(t *testing.T, n int, ok, failed string) {
		if n < 1 || n > sqslimit.MaxBatchEntries {
			return
		}
		c := &scripted{ok: split(ok), failed: split(failed)}
		res, err := NewDeleter(c, "q").Once(context.Background(), handles(n), nil)
		if err != nil {
			t.Fatal(err)
		}
		named := map[string]bool{}
		for _, id := range c.ok {
			named[id] = true
		}
		for i, r := range res {
			if r.OK != named[strconv.Itoa(i)] {
				t.Errorf("entry %d: OK %v with Successful %q", i, r.OK, c.ok)
			}
			if !r.OK && r.Err == nil {
				t.Errorf("entry %d neither confirmed nor failed", i)
			}
		}
	})
}

func split(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(s, ",")
}

type scripted struct{ ok, failed []string }

func (s *scripted) DeleteMessageBatch(ctx context.Context, in *sqs.DeleteMessageBatchInput, optFns ...func(*sqs.Options)) (*sqs.DeleteMessageBatchOutput, error) {
	out := &sqs.DeleteMessageBatchOutput{}
	for _, id := range s.ok {
		out.Successful = append(out.Successful, types.DeleteMessageBatchResultEntry{Id: aws.String(id)})
	}
	for _, id := range s.failed {
		out.Failed = append(out.Failed, types.BatchResultErrorEntry{Id: aws.String(id), Code: aws.String("InternalError")})
	}
	return out, nil
}

package sqstest

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/aws/smithy-go"
)

// Fault describes an injected failure or slowdown. See Fake.InjectFault.
//
// A Fault fails whole calls by default: the call returns Err (or hangs)
// before it takes effect, as when a request is throttled or never reaches
// SQS. AfterEffect models a lost response instead: the call takes effect and
// the caller still sees Err, or never sees an answer. Entries fails single
// entries of batch calls, as SQS reports in a batch response's Failed list;
// with Omit, the response leaves them out altogether.
type Fault struct {
	// API is the call to affect ("ReceiveMessage", …), or a comma-separated
	// list of calls. Zero value: every call.
	API string
	// Code is the SQS error code an affected call fails with, as SQS
	// answers it: "RequestThrottled" (throttling, *types.RequestThrottled),
	// "InternalError" (a server error, HTTP 500), "ServiceUnavailable"
	// (HTTP 503), or any other code, a client error (HTTP 400). Zero
	// value: none (see Err).
	Code string
	// Err is returned instead of the call's result, wrapped as the SDK
	// wraps errors, for a failure Code cannot name: any error. Set Code or
	// Err, not both. Zero value: with no Code either, the call is not
	// failed (only Latency and Hang apply).
	Err error
	// Times limits how many calls (with Entries: entries) fail; later ones
	// succeed. Zero value: every affected call fails until the fault is
	// removed.
	Times int
	// Every affects only every Every-th matching call (with Entries: entry):
	// the Every-th, the 2×Every-th, and so on, counted from the injection.
	// Zero value (or 1): every matching call.
	Every int
	// Latency is added to each matching call, failed or not. Zero value: none.
	Latency time.Duration
	// Hang makes an affected call wait, without answering, until its
	// context ends, and then return the context's error, as the SDK does
	// when a response never comes. Zero value: the call answers.
	Hang bool
	// AfterEffect lets an affected call take effect before it fails with Err
	// or hangs: the response is lost, so the caller cannot know that, for
	// example, its messages were received or deleted. Zero value: the call
	// fails before it takes effect.
	AfterEffect bool
	// ResponseDelay, with AfterEffect, is how long an affected call's
	// response takes once the call took effect, as if it were still on the
	// wire. A caller whose context ends meanwhile gets the context's error
	// and never sees the response, although the call took effect (an
	// interrupted receive whose messages are hidden all the same); otherwise
	// the caller gets the response — or Err, when set — after the delay.
	// Zero value: no delay. (Latency delays calls before they take effect.)
	ResponseDelay time.Duration
	// Entries fails single entries of the batch calls (SendMessageBatch,
	// DeleteMessageBatch, ChangeMessageVisibilityBatch) with Err instead of
	// whole calls: an affected entry does not take effect and is reported
	// in the response's Failed list, with SenderFault false for a server
	// error or throttling and true otherwise. Times and Every then count
	// entries. Entries cannot be combined with Hang or AfterEffect, and
	// needs Code or Err (or Omit). Zero value: whole calls fail.
	Entries bool
	// Omit, with Entries, leaves an affected entry out of the response
	// altogether, in neither its Successful nor its Failed list, as a
	// truncated or malformed response would: the entry does not take
	// effect, and a caller must count it as failed. Code and Err are not
	// used. Zero value: affected entries are listed in Failed.
	Omit bool
}

func (ft Fault) check() error {
	switch {
	case ft.Code != "" && ft.Err != nil:
		return errors.New("sqstest: Fault.Code and Fault.Err both say what an affected call fails with; set one")
	case ft.Times < 0 || ft.Every < 0 || ft.ResponseDelay < 0:
		return errors.New("sqstest: Fault.Times, Fault.Every and Fault.ResponseDelay must not be negative")
	case ft.ResponseDelay > 0 && !ft.AfterEffect:
		return errors.New("sqstest: Fault.ResponseDelay delays the response of a call that took effect and needs AfterEffect; use Latency to delay calls before they take effect")
	case ft.Entries && (ft.Hang || ft.AfterEffect):
		return errors.New("sqstest: Fault.Entries fails batch entries; it cannot be combined with Hang or AfterEffect")
	case ft.Omit && !ft.Entries:
		return errors.New("sqstest: Fault.Omit leaves batch entries out of a response and needs Fault.Entries")
	case ft.Entries && ft.Err == nil && ft.Code == "" && !ft.Omit:
		return errors.New("sqstest: Fault.Entries needs Fault.Code or Fault.Err, the error each affected entry reports (or Fault.Omit)")
	case ft.AfterEffect && ft.Err == nil && ft.Code == "" && !ft.Hang && ft.ResponseDelay == 0:
		return errors.New("sqstest: Fault.AfterEffect needs Fault.Code, Fault.Err, Fault.Hang or Fault.ResponseDelay: what the caller sees after the call took effect")
	}
	return nil
}

type faultRule struct {
	fault Fault
	apis  map[string]bool
	seen  int // matching calls (entries) so far
	fired int // of which affected
}

func (r *faultRule) matches(op string) bool { return len(r.apis) == 0 || r.apis[op] }

// failsCall reports whether the rule fails, hangs or delays the response
// of whole calls.
func (r *faultRule) failsCall() bool {
	return !r.fault.Entries && (r.fault.Err != nil || r.fault.Hang || r.fault.ResponseDelay > 0)
}

// take counts one matching call (or entry) and reports whether the fault
// affects it.
func (r *faultRule) take() bool {
	r.seen++
	if r.fault.Every > 1 && r.seen%r.fault.Every != 0 {
		return false
	}
	if r.fault.Times > 0 && r.fired >= r.fault.Times {
		return false
	}
	r.fired++
	return true
}

// InjectFault makes matching calls fail, hang, lose their response, fail
// some batch entries, or slow down, until the returned function removes
// the fault. Faults apply in the order injected; the first that affects a
// call wins, and latencies add up. InjectFault panics when the Fault's
// fields contradict each other (see Fault): that is a mistake in the test.
func (f *Fake) InjectFault(fault Fault) (remove func()) {
	if err := fault.check(); err != nil {
		panic(err.Error())
	}
	if fault.Code != "" {
		fault.Err = codeError(fault.Code)
	}
	r := &faultRule{fault: fault}
	if fault.API != "" {
		r.apis = map[string]bool{}
		for _, api := range strings.Split(fault.API, ",") {
			r.apis[strings.TrimSpace(api)] = true
		}
	}
	f.mu.Lock()
	f.faults = append(f.faults, r)
	f.mu.Unlock()
	return func() {
		f.mu.Lock()
		defer f.mu.Unlock()
		for i, x := range f.faults {
			if x == r {
				f.faults = append(f.faults[:i], f.faults[i+1:]...)
				return
			}
		}
	}
}

// call is one call's share of the injected faults.
type call struct {
	f       *Fake
	op      string
	after   *Fault       // a fault that strikes once the call took effect
	entries []*faultRule // rules failing single entries of this call
}

// begin counts the call, applies latency and the faults that strike before
// the call takes effect, and returns the call's remaining faults.
func (f *Fake) begin(ctx context.Context, op string) (*call, error) {
	f.mu.Lock()
	f.requests[op]++
	c := &call{f: f, op: op}
	delay := f.opts.Latency
	var hit *Fault
	for _, r := range f.faults {
		if !r.matches(op) {
			continue
		}
		delay += r.fault.Latency
		switch {
		case r.fault.Entries:
			c.entries = append(c.entries, r)
		case hit == nil && r.failsCall() && r.take():
			hit = &r.fault
		}
	}
	f.mu.Unlock()
	if delay > 0 {
		t := time.NewTimer(delay)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return nil, opError(op, &smithy.CanceledError{Err: ctx.Err()})
		}
	}
	if err := ctx.Err(); err != nil {
		return nil, opError(op, &smithy.CanceledError{Err: err})
	}
	if hit != nil && hit.AfterEffect {
		c.after = hit
	} else if hit != nil {
		return nil, c.strike(ctx, hit)
	}
	return c, nil
}

// strike returns what the caller of a call hit by ft sees: the fault's
// error, or, for a hanging call, the context's error once it ends.
func (c *call) strike(ctx context.Context, ft *Fault) error {
	if ft.Hang {
		<-ctx.Done()
		return opError(c.op, &smithy.CanceledError{Err: ctx.Err()})
	}
	return opError(c.op, ft.Err)
}

// failEntry applies the injected entry faults to the next entry of a
// batch call, id: an affected entry is listed in failed, or, with
// Fault.Omit, left out of the response. It reports whether the entry was
// affected (then it must not take effect). f.mu must be held.
func (c *call) failEntry(id *string, failed *[]types.BatchResultErrorEntry) bool {
	for _, r := range c.entries {
		if r.take() {
			if !r.fault.Omit {
				*failed = append(*failed, batchEntryError(aws.ToString(id), r.fault.Err))
			}
			return true
		}
	}
	return false
}

// settle applies a fault that strikes after the call took effect: the
// response is delayed (ResponseDelay) and then, or when the caller's
// context ends first, dropped, and the caller sees the fault. Call it,
// deferred, with the call's named results, after f.mu is released.
func settle[T any](ctx context.Context, c *call, out *T, err *error) {
	if c == nil || c.after == nil || *err != nil {
		return
	}
	var zero T
	if d := c.after.ResponseDelay; d > 0 {
		t := time.NewTimer(d)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			*out, *err = zero, opError(c.op, &smithy.CanceledError{Err: ctx.Err()})
			return
		}
		if c.after.Err == nil && !c.after.Hang {
			return // the response arrives, late
		}
	}
	*out = zero
	*err = c.strike(ctx, c.after)
}

package main

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/sqsworker/sqsworker/retry"
	"github.com/sqsworker/sqsworker/worker"
)

// jobAttr is the message attribute that carries a job's number, so every
// message can be told apart whatever its body (poison bodies included), in
// the source queue and in the dead-letter queue alike.
const jobAttr = "job"

// kind is what a job does when handled.
type kind int

const (
	ordinary kind = iota // works for a moment and succeeds
	long                 // runs past the visibility timeout: the heartbeat keeps it hidden
	flaky                // fails its first two attempts, then succeeds
	doomed               // fails every attempt: retried on the policy, then dead-lettered
	poison               // cannot be decoded: retry.Permanent, straight to the DLQ
	fixable              // rejected by the handler's bug; redriven once the fix is out
)

// The featured jobs; every other job is ordinary. The demo needs at least
// minJobs jobs so that they all exist.
const (
	longJob    = 0
	doomedJob  = 23
	fixableJob = 37
	minJobs    = 40
)

var (
	flakyJobs  = []int{7, 17, 29}
	poisonJobs = []int{31, 32}
)

func kindOf(id int) kind {
	switch {
	case id == longJob:
		return long
	case slices.Contains(flakyJobs, id):
		return flaky
	case id == doomedJob:
		return doomed
	case slices.Contains(poisonJobs, id):
		return poison
	case id == fixableJob:
		return fixable
	}
	return ordinary
}

// order is a job's body. WorkMS, FailFirst and Failure script what the
// handler does, so the body says how each job will behave.
type order struct {
	ID          int    `json:"id"`
	AmountCents int    `json:"amount_cents"`
	Currency    string `json:"currency"`
	WorkMS      int    `json:"work_ms"`
	FailFirst   int    `json:"fail_first,omitempty"` // fail attempts 1 … FailFirst
	Failure     string `json:"failure,omitempty"`    // with this error
}

// body returns job id's message body.
func body(id int, s settings) string {
	// Ordinary work times spread over [Work[0], Work[1]] by a fixed
	// permutation, so a run is repeatable.
	spread := s.Work[1] - s.Work[0]
	work := s.Work[0] + time.Duration(id*37%101)*spread/100
	o := order{ID: id, AmountCents: 500 + id*7%9000, Currency: []string{"EUR", "USD", "GBP", "JPY"}[id%4], WorkMS: int(work / time.Millisecond)}
	switch kindOf(id) {
	case long:
		o.WorkMS = int(s.LongJob / time.Millisecond)
	case flaky:
		o.FailFirst, o.Failure = 2, "payment gateway timed out"
	case doomed:
		o.FailFirst, o.Failure = 1000, "inventory service unavailable (HTTP 503)"
	case poison:
		if id%2 == 1 {
			return fmt.Sprintf(`{"id": %d, "amount_cents": 12,50, "currency": "EUR"}`, id) // a decimal comma
		}
		return fmt.Sprintf(`<order id="%d"/>`, id) // XML on a JSON queue
	case fixable:
		o.Currency = "CHF" // handler v1 does not know it
	}
	b, _ := json.Marshal(o)
	return string(b)
}

// jobRecord is what the handlers did with one job.
type jobRecord struct {
	starts, successes, failures int
	firstStart, firstFail       time.Time
	extensions                  int
}

// retryRecord is one retry as it happened against the policy's schedule.
type retryRecord struct {
	Job, Retry   int
	At, Schedule time.Duration // since the job's first failure
}

// demo is the handler's state: the ledger of every job, and whether the fix
// for the fixable job is deployed.
type demo struct {
	con      *console
	schedule []time.Duration // cumulative delay before retry n (index n-1)
	attempts int             // deliveries the policy allows

	mu      sync.Mutex
	fixed   bool               // handler v2 deployed: it accepts CHF
	jobs    map[int]*jobRecord // by job number
	handles map[string]int     // receipt handle → job, for the jobs whose heartbeat is shown
	retries []retryRecord      // in the order they came
	dead    map[int]string     // job → reason, as the worker sent it to the DLQ

	redriven     map[int]bool   // jobs the redrive moved back
	afterRedrive map[int]string // a line to print once the job's redrive is reported
}

func newDemo(con *console, policy retry.DeliveryPolicy) *demo {
	d := &demo{con: con, jobs: map[int]*jobRecord{}, handles: map[string]int{}, dead: map[int]string{},
		redriven: map[int]bool{}, afterRedrive: map[int]string{}}
	var total time.Duration
	for _, delay := range policy.Delays() {
		total += delay
		d.schedule = append(d.schedule, total)
	}
	d.attempts = len(d.schedule) + 1
	return d
}

// jobOf reads the job number from a message's attributes.
func jobOf(attrs map[string]types.MessageAttributeValue) (int, bool) {
	v, ok := attrs[jobAttr]
	if !ok {
		return 0, false
	}
	id, err := strconv.Atoi(aws.ToString(v.StringValue))
	return id, err == nil
}

// handle is the worker's handler: it decodes the order and processes it.
func (d *demo) handle(ctx context.Context, m *worker.Message) error {
	id, ok := jobOf(m.MessageAttributes)
	if !ok {
		return retry.Permanent(fmt.Errorf("message %s has no %q attribute", m.ID, jobAttr))
	}
	d.started(id, m)
	err := d.process(ctx, id, m)
	d.finished(id, m, err)
	return err
}

func (d *demo) process(ctx context.Context, id int, m *worker.Message) error {
	var o order
	if err := json.Unmarshal([]byte(m.Body), &o); err != nil {
		return retry.Permanent(fmt.Errorf("job %d: decoding the order: %w", id, err))
	}
	if !d.supports(o.Currency) {
		return retry.Permanent(fmt.Errorf("job %d: unsupported currency %q", id, o.Currency))
	}
	if m.Attempt <= o.FailFirst {
		return fmt.Errorf("job %d: %s", id, o.Failure)
	}
	t := time.NewTimer(time.Duration(o.WorkMS) * time.Millisecond)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("job %d: stopped: %w", id, context.Cause(ctx))
	}
}

// supports is the handler's currency check; version 1 forgot CHF.
func (d *demo) supports(currency string) bool {
	switch currency {
	case "EUR", "USD", "GBP", "JPY":
		return true
	case "CHF":
		d.mu.Lock()
		defer d.mu.Unlock()
		return d.fixed
	}
	return false
}

// deployFix switches the handler to version 2, which accepts CHF.
func (d *demo) deployFix() {
	d.mu.Lock()
	d.fixed = true
	d.mu.Unlock()
}

func (d *demo) record(id int) *jobRecord {
	r, ok := d.jobs[id]
	if !ok {
		r = &jobRecord{}
		d.jobs[id] = r
	}
	return r
}

// started records a handler start and prints retries as they arrive.
func (d *demo) started(id int, m *worker.Message) {
	now := time.Now()
	d.mu.Lock()
	defer d.mu.Unlock()
	r := d.record(id)
	r.starts++
	if r.firstStart.IsZero() {
		r.firstStart = now
	}
	switch {
	case kindOf(id) == long:
		d.handles[m.ReceiptHandle] = id
		d.con.Eventf("job %d started: it runs %v, longer than the queue's visibility timeout", id, longDuration(m.Body))
	case kindOf(id) == fixable && d.fixed:
		line := fmt.Sprintf("job %d received again after the redrive (a new message: attempt %d)", id, m.Attempt)
		if !d.redriven[id] {
			// The worker can receive the job before the redrive has
			// deleted it from the dead-letter queue and reported the move:
			// print it after the move.
			d.afterRedrive[id] = line
			break
		}
		d.con.Eventf("%s", line)
	case !r.firstFail.IsZero() && m.Attempt > 1 && m.Attempt-1 <= len(d.schedule):
		n := m.Attempt - 1
		rr := retryRecord{Job: id, Retry: n, At: now.Sub(r.firstFail), Schedule: d.schedule[n-1]}
		d.retries = append(d.retries, rr)
		d.con.Eventf("job %d retry %d at %s (schedule %s)", id, n, stamp(rr.At), stamp(rr.Schedule))
	}
}

// finished records a handler's outcome.
func (d *demo) finished(id int, m *worker.Message, err error) {
	now := time.Now()
	d.mu.Lock()
	defer d.mu.Unlock()
	r := d.record(id)
	if err != nil {
		r.failures++
		if r.firstFail.IsZero() {
			r.firstFail = now
		}
		if kindOf(id) == doomed && m.Attempt >= d.attempts {
			d.con.Eventf("job %d attempt %d failed (%v): no retries left", id, m.Attempt, err)
		}
		return
	}
	r.successes++
	switch {
	case kindOf(id) == long:
		d.con.Eventf("job %d done after %.1fs: it ran %s, kept invisible by %d heartbeat extensions",
			id, now.Sub(r.firstStart).Seconds(), times(r.starts), r.extensions)
	case kindOf(id) == flaky:
		d.con.Eventf("job %d done on attempt %d", id, m.Attempt)
	case kindOf(id) == fixable:
		d.con.Eventf("job %d done by handler v2", id)
	}
}

// watchedHandle reports the job of a receipt handle whose heartbeat the
// demo shows.
func (d *demo) watchedHandle(handle string) (int, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	id, ok := d.handles[handle]
	return id, ok
}

// extended records a heartbeat extension seen on the wire.
func (d *demo) extended(id int, seconds int32) {
	d.mu.Lock()
	defer d.mu.Unlock()
	r := d.record(id)
	r.extensions++
	d.con.Eventf("job %d heartbeat: visibility extended by %ds (extension %d, %.1fs into the job)",
		id, seconds, r.extensions, time.Since(r.firstStart).Seconds())
}

// deadLettered records a dead-letter move seen on the wire.
func (d *demo) deadLettered(id int, reason string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.dead[id] = reason
	d.con.Eventf("job %d -> dead-letter queue: %s", id, reason)
}

// redrivenTo notes and prints that a job was moved back from the DLQ to
// queue, then what happened to it meanwhile.
func (d *demo) redrivenTo(id int, queue string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	delete(d.dead, id)
	d.redriven[id] = true
	d.con.Eventf("job %d moved back to %s by the redrive", id, queue)
	if line, ok := d.afterRedrive[id]; ok {
		delete(d.afterRedrive, id)
		d.con.Eventf("%s", line)
	}
}

// counts returns how many jobs are done, waiting for a retry, and
// dead-lettered, as the handlers and the wire saw it.
func (d *demo) counts() (done, retrying, dead int) {
	d.mu.Lock()
	defer d.mu.Unlock()
	for id, r := range d.jobs {
		_, isDead := d.dead[id]
		switch {
		case r.successes > 0:
			done++
		case isDead:
		case r.failures > 0:
			retrying++
		}
	}
	return done, retrying, len(d.dead)
}

// isDone reports whether a job's handler has succeeded.
func (d *demo) isDone(id int) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	r, ok := d.jobs[id]
	return ok && r.successes > 0
}

// longDuration reads the work time from a body, for printing.
func longDuration(body string) time.Duration {
	var o order
	_ = json.Unmarshal([]byte(body), &o)
	return time.Duration(o.WorkMS) * time.Millisecond
}

// times says how many times something happened: "once", "twice", "3 times".
func times(n int) string {
	switch n {
	case 1:
		return "once"
	case 2:
		return "twice"
	}
	return strconv.Itoa(n) + " times"
}

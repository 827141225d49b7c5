package schedules_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/scheduler"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/sqsworker/sqsworker/producer"
	"github.com/sqsworker/sqsworker/schedules"
	"github.com/sqsworker/sqsworker/schedules/schedulestest"
	"github.com/sqsworker/sqsworker/sqstest"
	"github.com/sqsworker/sqsworker/worker"
)

const role = "arn:aws:iam::123456789012:role/scheduler"

type env struct {
	sqs   *sqstest.Fake
	sched *schedulestest.Scheduler
	url   string
	arn   string
	stop  func()
}

// start sets up an SQS fake with queue "jobs" and a Scheduler firing into
// it (inside a synctest bubble).
func start(t *testing.T, deliveries int) *env {
	q := sqstest.For(t)
	url := q.MustCreateQueue(t, "jobs", nil)
	s, err := schedulestest.New(q, func(o *schedulestest.Options) { o.Deliveries = deliveries })
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { _ = s.Run(ctx); close(done) }()
	return &env{sqs: q, sched: s, url: url, arn: "arn:aws:sqs:us-east-1:123456789012:jobs", stop: func() { cancel(); <-done }}
}

// drain receives every message in the queue and passes it through h.
func (e *env) drain(t *testing.T, h worker.Handler) []*worker.Message {
	var out []*worker.Message
	for {
		r, err := e.sqs.ReceiveMessage(context.Background(), &sqs.ReceiveMessageInput{QueueUrl: &e.url, MaxNumberOfMessages: 10, VisibilityTimeout: 3600})
		if err != nil {
			t.Fatal(err)
		}
		if len(r.Messages) == 0 {
			return out
		}
		for _, m := range r.Messages {
			wm := &worker.Message{ID: *m.MessageId, Body: *m.Body, MessageAttributes: m.MessageAttributes}
			if h != nil {
				if err := h.Handle(context.Background(), wm); err != nil {
					t.Fatal(err)
				}
			}
			out = append(out, wm)
			_, _ = e.sqs.DeleteMessage(context.Background(), &sqs.DeleteMessageInput{QueueUrl: &e.url, ReceiptHandle: m.ReceiptHandle})
		}
	}
}

func collect(ticks *[]schedules.Tick, mu *sync.Mutex) worker.Handler {
	return worker.HandlerFunc(func(ctx context.Context, m *worker.Message) error {
		tk, ok := schedules.TickOf(m)
		if !ok {
			return fmt.Errorf("message %s carries no tick", m.ID)
		}
		mu.Lock()
		*ticks = append(*ticks, tk)
		mu.Unlock()
		return nil
	})
}

// TestYearAcrossDST runs a year of daily schedules in virtual time in
// three zones and checks each tick fires once at the documented time (the
// table in the package documentation).
func TestYearAcrossDST(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		time.Sleep(time.Until(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)))
		e := start(t, 1)
		decl := []schedules.Schedule{
			{Name: "paris-0230", Expression: "cron(30 2 * * ? *)", TimeZone: "Europe/Paris", Queue: e.arn, Body: "p"},
			{Name: "ny-0230", Expression: "cron(30 2 * * ? *)", TimeZone: "America/New_York", Queue: e.arn, Body: "n2"},
			{Name: "ny-0130", Expression: "cron(30 1 * * ? *)", TimeZone: "America/New_York", Queue: e.arn, Body: "n1"},
			{Name: "utc-0230", Expression: "cron(30 2 * * ? *)", Queue: e.arn, Body: "u"},
		}
		if _, err := schedules.Apply(context.Background(), e.sched, decl, func(o *schedules.Options) { o.RoleARN = role }); err != nil {
			t.Fatal(err)
		}
		var ticks []schedules.Tick
		var mu sync.Mutex
		h := schedules.Unwrap()(collect(&ticks, &mu))
		// Drain daily: the queue's retention (4 days) would drop the rest.
		for time.Now().Before(time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC)) {
			time.Sleep(24 * time.Hour)
			synctest.Wait()
			e.drain(t, h)
		}
		e.stop()

		by := map[string][]time.Time{}
		for _, tk := range ticks {
			by[tk.Schedule] = append(by[tk.Schedule], tk.Time)
		}
		want := []struct {
			name, tz, wall string
			n              int
			edges          map[string]string // local date → UTC instant ("" = no tick)
		}{
			{"paris-0230", "Europe/Paris", "02:30", 364, map[string]string{"2026-03-29": "", "2026-10-25": "2026-10-25T00:30:00Z", "2026-07-01": "2026-07-01T00:30:00Z", "2026-12-01": "2026-12-01T01:30:00Z"}},
			{"ny-0230", "America/New_York", "02:30", 364, map[string]string{"2026-03-08": "", "2026-11-01": "2026-11-01T07:30:00Z"}},
			{"ny-0130", "America/New_York", "01:30", 365, map[string]string{"2026-03-08": "2026-03-08T06:30:00Z", "2026-11-01": "2026-11-01T05:30:00Z"}},
			{"utc-0230", "UTC", "02:30", 365, map[string]string{"2026-03-29": "2026-03-29T02:30:00Z", "2026-10-25": "2026-10-25T02:30:00Z"}},
		}
		for _, w := range want {
			loc, _ := time.LoadLocation(w.tz)
			got := by[w.name]
			if len(got) != w.n {
				t.Errorf("%s: %d ticks in 2026, want %d", w.name, len(got), w.n)
			}
			days := map[string]string{}
			for _, g := range got {
				l := g.In(loc)
				if l.Format("15:04") != w.wall {
					t.Errorf("%s: tick at %s local, want %s", w.name, l, w.wall)
				}
				d := l.Format("2006-01-02")
				if days[d] != "" {
					t.Errorf("%s: two ticks on %s", w.name, d)
				}
				days[d] = g.UTC().Format(time.RFC3339)
			}
			for d, inst := range w.edges {
				if days[d] != inst {
					t.Errorf("%s on %s: tick %q, want %q", w.name, d, days[d], inst)
				}
			}
		}
	})
}

// TestConcurrentApply: four processes apply the same declared set at once.
func TestConcurrentApply(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := start(t, 1)
		defer e.stop()
		ctx := context.Background()
		opts := func(o *schedules.Options) { o.RoleARN = role; o.Group = "svc" }
		old := []schedules.Schedule{
			{Name: "gone", Expression: "rate(1 hour)", Queue: e.arn, Body: "old"},
			{Name: "b", Expression: "rate(2 hours)", Queue: e.arn, Body: "b-old"},
		}
		if _, err := schedules.Apply(ctx, e.sched, old, opts); err != nil {
			t.Fatal(err)
		}
		decl := []schedules.Schedule{
			{Name: "a", Expression: "cron(0 * * * ? *)", Queue: e.arn, Body: "a", Overlap: "skip"},
			{Name: "b", Expression: "rate(1 hour)", Queue: e.arn, Body: "b", FlexibleWindow: 5 * time.Minute},
			{Name: "c", Expression: "cron(0 9 ? * MON-FRI *)", TimeZone: "Europe/Paris", Queue: e.arn, Body: "c",
				Attributes: map[string]sqstypes.MessageAttributeValue{"tenant": {DataType: aws.String("String"), StringValue: aws.String("t1")}}},
		}
		var wg sync.WaitGroup
		errs := make([]error, 4)
		changes := make([][]schedules.Change, 4)
		for i := range 4 {
			wg.Go(func() { changes[i], errs[i] = schedules.Apply(ctx, e.sched, decl, opts) })
		}
		wg.Wait()
		for i, err := range errs {
			if err != nil {
				t.Fatalf("process %d: %v", i, err)
			}
		}
		got, err := schedules.List(ctx, e.sched, opts)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != 3 {
			t.Fatalf("group holds %d schedules, want 3: %+v", len(got), got)
		}
		for i, s := range got {
			d := decl[i]
			if s.Name != d.Name || s.Expression != d.Expression || s.Body != d.Body || s.FlexibleWindow != d.FlexibleWindow || s.Overlap != d.Overlap {
				t.Errorf("schedule %d: got %+v, want %+v", i, s, d)
			}
		}
		if v := got[2].Attributes["tenant"].StringValue; v == nil || *v != "t1" {
			t.Errorf("c's attributes not kept: %+v", got[2].Attributes)
		}
		if d, err := schedules.Diff(ctx, e.sched, decl, opts); err != nil || len(d) != 0 {
			t.Errorf("Diff after Apply: %v, %v; want no change", d, err)
		}
		deleted := 0
		for _, cs := range changes {
			for _, c := range cs {
				if c.Name == "gone" && c.Action == "delete" {
					deleted++
				}
			}
		}
		if deleted != 1 {
			t.Errorf("gone deleted by %d processes, want 1", deleted)
		}
		// Nothing duplicated: in three hours, a fires 3 times and b 3 times.
		synctest.Wait() // the ticks due at creation are sent
		e.drain(t, nil)
		time.Sleep(3*time.Hour + 10*time.Minute)
		synctest.Wait()
		count := map[string]int{}
		var ticks []schedules.Tick
		var mu sync.Mutex
		e.drain(t, schedules.Unwrap()(collect(&ticks, &mu)))
		for _, tk := range ticks {
			count[tk.Schedule]++
		}
		if count["a"] != 3 || count["b"] != 3 || count["gone"] != 0 {
			t.Errorf("ticks in 3 h: %v; want a:3 b:3", count)
		}
	})
}

// TestEachTickOnce: Scheduler delivers every tick twice; with Dedup the
// job runs once per tick.
func TestEachTickOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := start(t, 2)
		ctx := context.Background()
		decl := []schedules.Schedule{{Name: "hourly", Expression: "rate(1 hour)", Queue: e.arn, Body: "x"}}
		if _, err := schedules.Apply(ctx, e.sched, decl, func(o *schedules.Options) { o.RoleARN = role }); err != nil {
			t.Fatal(err)
		}
		time.Sleep(24*time.Hour - time.Second)
		synctest.Wait()
		e.stop()
		claimed := map[string]string{}
		var mu sync.Mutex
		dedup := func(ctx context.Context, key, id string) (bool, error) {
			mu.Lock()
			defer mu.Unlock()
			if owner, ok := claimed[key]; ok {
				return owner == id, nil
			}
			claimed[key] = id
			return true, nil
		}
		skipped := 0
		var ticks []schedules.Tick
		h := schedules.Unwrap(func(o *schedules.UnwrapOptions) {
			o.Dedup = dedup
			o.OnSkip = func(ctx context.Context, tk schedules.Tick, reason string) {
				if reason == "duplicate" {
					skipped++
				}
			}
		})(collect(&ticks, &mu))
		msgs := e.drain(t, h)
		if len(msgs) != 48 || len(ticks) != 24 || skipped != 24 {
			t.Fatalf("delivered %d, ran %d, skipped %d; want 48, 24, 24", len(msgs), len(ticks), skipped)
		}
		// A redelivery of the message that ran (a retry) runs again.
		again := 0
		h2 := schedules.Unwrap(func(o *schedules.UnwrapOptions) { o.Dedup = dedup })(worker.HandlerFunc(func(context.Context, *worker.Message) error { again++; return nil }))
		for _, m := range msgs {
			_ = h2.Handle(ctx, m)
		}
		if again != 24 {
			t.Errorf("redeliveries of the claiming messages ran %d times, want 24", again)
		}
	})
}

// TestOverlapSkip: a tick arriving while the previous run of the same
// schedule still runs is skipped and counted.
func TestOverlapSkip(t *testing.T) {
	body := func(at string) string {
		return `{"sqsworker":"sqsworker.schedule/1","arn":"arn:aws:scheduler:us-east-1:123456789012:schedule/default/s","time":"` + at + `","overlap":"skip","body":"b"}`
	}
	release := make(chan struct{})
	started := make(chan struct{}, 1)
	var skips []string
	h := schedules.Unwrap(func(o *schedules.UnwrapOptions) {
		o.OnSkip = func(_ context.Context, tk schedules.Tick, reason string) {
			skips = append(skips, reason+" "+tk.Schedule)
		}
	})(worker.HandlerFunc(func(context.Context, *worker.Message) error { started <- struct{}{}; <-release; return nil }))
	done := make(chan error)
	go func() {
		done <- h.Handle(context.Background(), &worker.Message{ID: "1", Body: body("2026-01-01T00:00:00Z")})
	}()
	<-started
	if err := h.Handle(context.Background(), &worker.Message{ID: "2", Body: body("2026-01-01T00:01:00Z")}); err != nil {
		t.Fatal(err)
	}
	close(release)
	<-done
	if len(skips) != 1 || skips[0] != "overlap s" {
		t.Fatalf("skips %v, want one overlap of s", skips)
	}
}

// TestJobsCancelReschedule: one-time jobs through Scheduler.
func TestJobsCancelReschedule(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := start(t, 1)
		defer e.stop()
		ctx := context.Background()
		jobs, err := schedules.NewJobs(e.sched, e.arn, func(o *schedules.Options) { o.RoleARN = role })
		if err != nil {
			t.Fatal(err)
		}
		now := time.Now()
		msg := producer.Message{Body: "remind", Attributes: map[string]sqstypes.MessageAttributeValue{"kind": {DataType: aws.String("String"), StringValue: aws.String("reminder")}}}
		for _, id := range []string{"cancel-me", "move-me", "late-cancel", "keep"} {
			if _, err := jobs.At(ctx, id, now.Add(2*time.Hour), msg); err != nil {
				t.Fatal(err)
			}
		}
		if id, err := jobs.At(ctx, "keep", now.Add(2*time.Hour), msg); err != nil || id != "keep" {
			t.Fatalf("At again with the same content: %q, %v; want a no-op", id, err)
		}
		if _, err := jobs.At(ctx, "keep", now.Add(3*time.Hour), msg); !errors.Is(err, schedules.ErrInvalid) {
			t.Fatalf("At on a pending ID with other content: %v; want ErrInvalid", err)
		}
		if ok, err := jobs.Cancel(ctx, "cancel-me"); !ok || err != nil {
			t.Fatalf("Cancel: %v, %v", ok, err)
		}
		if ok, err := jobs.Reschedule(ctx, "move-me", now.Add(5*time.Hour)); !ok || err != nil {
			t.Fatalf("Reschedule: %v, %v", ok, err)
		}
		time.Sleep(2*time.Hour - 30*time.Second)
		if ok, err := jobs.Cancel(ctx, "late-cancel"); ok || err != nil {
			t.Fatalf("Cancel 30 s before due: %v, %v; want false (the fire wins)", ok, err)
		}
		time.Sleep(time.Minute)
		synctest.Wait()
		var ticks []schedules.Tick
		var mu sync.Mutex
		var kinds []string
		h := schedules.Unwrap()(worker.HandlerFunc(func(ctx context.Context, m *worker.Message) error {
			kinds = append(kinds, *m.MessageAttributes["kind"].StringValue+":"+m.Body)
			return collect(&ticks, &mu).Handle(ctx, m)
		}))
		e.drain(t, h)
		if len(ticks) != 2 || ticks[0].Group != "sqsworker-jobs" {
			t.Fatalf("after 2 h: ran %+v; want keep and late-cancel", ticks)
		}
		if kinds[0] != "reminder:remind" {
			t.Errorf("job's body and attributes not restored: %v", kinds)
		}
		if ok, _ := jobs.Cancel(ctx, "keep"); ok {
			t.Error("Cancel after the fire: true, want false")
		}
		time.Sleep(3 * time.Hour)
		synctest.Wait()
		ticks = nil
		e.drain(t, h)
		if len(ticks) != 1 || ticks[0].Schedule != "move-me" || !ticks[0].Time.Equal(now.Add(5*time.Hour).Truncate(time.Second)) {
			t.Fatalf("after 5 h: %+v; want move-me at its new time", ticks)
		}
		if l, _ := schedules.List(ctx, e.sched, func(o *schedules.Options) { o.Group = "sqsworker-jobs" }); len(l) != 0 {
			t.Errorf("fired one-time schedules not deleted: %+v", l)
		}
	})
}

type counting struct {
	schedules.API
	calls int
}

func (c *counting) ListSchedules(ctx context.Context, in *scheduler.ListSchedulesInput, f ...func(*scheduler.Options)) (*scheduler.ListSchedulesOutput, error) {
	c.calls++
	return c.API.ListSchedules(ctx, in, f...)
}

func (c *counting) CreateSchedule(ctx context.Context, in *scheduler.CreateScheduleInput, f ...func(*scheduler.Options)) (*scheduler.CreateScheduleOutput, error) {
	c.calls++
	return c.API.CreateSchedule(ctx, in, f...)
}

// TestBadInputRefused: refused before any call, with what to change.
func TestBadInputRefused(t *testing.T) {
	q := sqstest.For(t)
	s, _ := schedulestest.New(q)
	c := &counting{API: s}
	arn := "arn:aws:sqs:us-east-1:123456789012:jobs"
	ok := schedules.Schedule{Name: "ok", Expression: "rate(1 hour)", Queue: arn}
	with := func(f func(*schedules.Schedule)) schedules.Schedule { x := ok; f(&x); return x }
	cases := []struct {
		s    schedules.Schedule
		want string
	}{
		{with(func(x *schedules.Schedule) { x.Expression = "cron(0 10 * * *)" }), "six"},
		{with(func(x *schedules.Schedule) { x.Expression = "cron(0 10 * * MON *)" }), "'?'"},
		{with(func(x *schedules.Schedule) { x.TimeZone = "Europe/Pariss" }), "IANA"},
		{with(func(x *schedules.Schedule) { x.Expression = "at(2020-01-01T00:00:00)" }), "future"},
		{with(func(x *schedules.Schedule) { x.Expression = "at(2030-03-31T02:30:00)"; x.TimeZone = "Europe/Paris" }), "daylight"},
		{with(func(x *schedules.Schedule) { x.Body = strings.Repeat("x", 256*1024) }), "input limit"},
		{with(func(x *schedules.Schedule) { x.Name = "no spaces" }), "letters"},
		{with(func(x *schedules.Schedule) { x.Queue = "jobs" }), "ARN"},
		{with(func(x *schedules.Schedule) { x.Overlap = "queue" }), "skip"},
		{with(func(x *schedules.Schedule) { x.FlexibleWindow = 90 * time.Second }), "whole minutes"},
	}
	for _, cs := range cases {
		_, err := schedules.Apply(context.Background(), c, []schedules.Schedule{cs.s}, func(o *schedules.Options) { o.RoleARN = role })
		if !errors.Is(err, schedules.ErrInvalid) || !strings.Contains(err.Error(), cs.want) {
			t.Errorf("%+v: %v; want ErrInvalid saying %q", cs.s.Expression, err, cs.want)
		}
	}
	if _, err := schedules.Apply(context.Background(), c, []schedules.Schedule{ok}); !errors.Is(err, schedules.ErrInvalid) || !strings.Contains(err.Error(), "RoleARN") {
		t.Errorf("no role: %v", err)
	}
	jobs, _ := schedules.NewJobs(c, arn, func(o *schedules.Options) { o.RoleARN = role })
	if _, err := jobs.At(context.Background(), "", time.Now().Add(-time.Minute), producer.Message{Body: "x"}); !errors.Is(err, schedules.ErrInvalid) {
		t.Errorf("job in the past: %v", err)
	}
	if c.calls != 0 {
		t.Errorf("%d calls made for refused input, want 0", c.calls)
	}
}

// TestEnvelopeKeepsKeywords: the context-attribute keywords reach
// Scheduler unescaped.
func TestEnvelopeKeepsKeywords(t *testing.T) {
	q := sqstest.For(t)
	s, _ := schedulestest.New(q)
	decl := []schedules.Schedule{{Name: "k", Expression: "rate(1 day)", Queue: "arn:aws:sqs:us-east-1:123456789012:jobs", Body: `<b>&`}}
	if _, err := schedules.Apply(context.Background(), s, decl, func(o *schedules.Options) { o.RoleARN = role }); err != nil {
		t.Fatal(err)
	}
	g, _ := s.GetSchedule(context.Background(), &scheduler.GetScheduleInput{Name: aws.String("k")})
	in := aws.ToString(g.Target.Input)
	if !strings.Contains(in, "<aws.scheduler.scheduled-time>") || !json.Valid([]byte(in)) {
		t.Fatalf("input %s", in)
	}
}

// A rate schedule without Start counts its ticks from its creation, as
// Scheduler does: List reports when it was created, and Next counts from
// it (the console's next fire times), not from the time it is asked.
func TestRateCountsFromCreation(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := start(t, 1)
		defer e.stop()
		ctx := context.Background()
		created := time.Now()
		if _, err := schedules.Apply(ctx, e.sched, []schedules.Schedule{{Name: "warm", Expression: "rate(15 minutes)", Queue: e.arn, Body: "w"}},
			func(o *schedules.Options) { o.RoleARN = role }); err != nil {
			t.Fatal(err)
		}
		time.Sleep(20 * time.Minute)
		list, err := schedules.List(ctx, e.sched)
		if err != nil || len(list) != 1 {
			t.Fatalf("List: %v, %v", list, err)
		}
		s := list[0]
		if !s.Created.Equal(created) {
			t.Errorf("Created %v; want %v", s.Created, created)
		}
		if next, err := s.Next(time.Now()); err != nil || !next.Equal(created.Add(30*time.Minute)) {
			t.Errorf("Next 20 min after creation: %v, %v; want creation + 30 min", next, err)
		}
		if changes, err := schedules.Diff(ctx, e.sched, []schedules.Schedule{{Name: "warm", Expression: "rate(15 minutes)", Queue: e.arn, Body: "w"}},
			func(o *schedules.Options) { o.RoleARN = role }); err != nil || len(changes) != 0 {
			t.Errorf("Diff after List reports %v, %v; Created must not count as a change", changes, err)
		}
	})
}

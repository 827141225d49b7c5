package producer_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/sqsworker/sqsworker/internal/schedule"
	"github.com/sqsworker/sqsworker/producer"
	"github.com/sqsworker/sqsworker/sqstest"
)

// fakeSchedule records what Options.Schedule was given.
type fakeSchedule struct {
	mu   sync.Mutex
	got  []producer.Message
	dues []time.Time
	err  error
}

func (s *fakeSchedule) schedule(_ context.Context, due time.Time, m producer.Message) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.err != nil {
		return "", s.err
	}
	s.got = append(s.got, m)
	s.dues = append(s.dues, due)
	return "job-" + m.Body, nil
}

func TestScheduleTakesDelaysPastTheHorizon(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	f := sqstest.For(t)
	url := f.MustCreateQueue(t, "jobs", nil)
	fs := &fakeSchedule{}
	hook := func(_ context.Context, m *producer.Message) error {
		m.SetAttribute("hooked", types.MessageAttributeValue{DataType: aws.String("String"), StringValue: aws.String("yes")})
		return nil
	}
	p := newProducer(t, f, url, func(o *producer.Options) {
		o.Schedule, o.Now = fs.schedule, func() time.Time { return now }
		o.BeforeSend = append(o.BeforeSend, hook)
	})

	// Send: a 2 h delay goes to Schedule, with the hook's attribute, no
	// due-time attribute and Delay zeroed; no SQS call.
	res, err := p.Send(t.Context(), producer.Message{Body: "later", Delay: 2 * time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	if res.MessageID != "job-later" || !res.Due.Equal(now.Add(2*time.Hour)) {
		t.Errorf("result %+v, want MessageID job-later and Due now+2h", res)
	}
	if n := f.Requests()["SendMessageBatch"]; n != 0 {
		t.Errorf("%d SendMessageBatch calls for a scheduled message, want 0", n)
	}
	if len(fs.got) != 1 || !fs.dues[0].Equal(now.Add(2*time.Hour)) {
		t.Fatalf("Schedule got %d messages, dues %v", len(fs.got), fs.dues)
	}
	m := fs.got[0]
	if m.Delay != 0 || aws.ToString(m.Attributes["hooked"].StringValue) != "yes" {
		t.Errorf("scheduled message %+v: want Delay 0 and the hook's attribute", m)
	}
	if _, ok := m.Attributes[schedule.Attribute]; ok {
		t.Errorf("scheduled message carries %s; the schedule is its due time", schedule.Attribute)
	}

	// SendBatch: only the delays past 15 minutes are routed; the others
	// go to the queue.
	msgs := []producer.Message{
		{Body: "now"}, {Body: "in-15m", Delay: 15 * time.Minute}, {Body: "in-16m", Delay: 16 * time.Minute}, {Body: "in-30d", Delay: 30 * 24 * time.Hour},
	}
	out, err := p.SendBatch(t.Context(), msgs)
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range []string{"", "", "job-in-16m", "job-in-30d"} {
		if out[i].Err != nil || out[i].MessageID == "" || (want != "" && out[i].MessageID != want) || (want == "" && strings.HasPrefix(out[i].MessageID, "job-")) {
			t.Errorf("result %d: %+v, want MessageID %q (empty: from SQS)", i, out[i], want)
		}
	}
	if n := f.Requests()["SendMessageBatch"]; n != 1 {
		t.Errorf("%d SendMessageBatch calls, want 1 (two messages)", n)
	}
	if got := len(f.Messages(url)); got != 2 {
		t.Errorf("queue holds %d messages, want 2", got)
	}

	// Enqueue takes the same route.
	pd, err := p.Enqueue(t.Context(), producer.Message{Body: "enq", Delay: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	if r, err := pd.Wait(t.Context()); err != nil || r.MessageID != "job-enq" {
		t.Errorf("Enqueue: %+v, %v", r, err)
	}
	if st := p.Stats(); st.Sent != 6 || st.Delayed != 4 || st.Requests != 1 {
		t.Errorf("stats %+v, want 6 sent, 4 delayed (scheduled), 1 request", st)
	}
	if err := p.Close(t.Context()); err != nil {
		t.Fatal(err)
	}
}

func TestScheduleHorizonErrorsAndFIFO(t *testing.T) {
	f := sqstest.For(t)
	url := f.MustCreateQueue(t, "jobs", nil)
	fs := &fakeSchedule{err: errors.New("scheduler down")}
	p := newProducer(t, f, url, func(o *producer.Options) { o.Schedule, o.ScheduleAfter = fs.schedule, time.Hour })

	// Within the horizon: the queue (the due-time attribute past 15 min).
	if _, err := p.Send(t.Context(), producer.Message{Body: "in-1h", Delay: time.Hour}); err != nil {
		t.Fatal(err)
	}
	// Past it: Schedule's error is the Result's, nothing is sent.
	res, err := p.Send(t.Context(), producer.Message{Body: "in-2h", Delay: 2 * time.Hour})
	if err == nil || !errors.Is(res.Err, fs.err) || res.MessageID != "" {
		t.Errorf("Send with a failing Schedule: %+v, %v", res, err)
	}
	out, err := p.SendBatch(t.Context(), []producer.Message{{Body: "a", Delay: 2 * time.Hour}, {Body: "b"}})
	var be *producer.BatchError
	if !errors.As(err, &be) || be.Failed != 1 || !errors.Is(out[0].Err, fs.err) || out[1].Err != nil {
		t.Errorf("SendBatch with a failing Schedule: %+v, %v", out, err)
	}
	if got := len(f.Messages(url)); got != 2 {
		t.Errorf("queue holds %d messages, want 2 (in-1h, b)", got)
	}
	if _, err := producer.New(f, url, func(o *producer.Options) { o.ScheduleAfter = -time.Second }); err == nil {
		t.Error("a negative ScheduleAfter was taken")
	}

	// FIFO: a delay past the horizon is scheduled, one within is refused.
	furl := f.MustCreateQueue(t, "jobs.fifo", map[string]string{"FifoQueue": "true", "ContentBasedDeduplication": "true"})
	fs.err = nil
	fp := newProducer(t, f, furl, func(o *producer.Options) { o.Schedule = fs.schedule })
	res, err = fp.Send(t.Context(), producer.Message{Body: "fifo", GroupID: "g", Delay: time.Hour})
	if err != nil || res.MessageID != "job-fifo" || fs.got[len(fs.got)-1].GroupID != "g" {
		t.Errorf("FIFO send past the horizon: %+v, %v", res, err)
	}
	if _, err := fp.Send(t.Context(), producer.Message{Body: "fifo2", GroupID: "g", Delay: time.Minute}); !errors.Is(err, producer.ErrInvalid) {
		t.Errorf("FIFO delay within the horizon: %v, want ErrInvalid", err)
	}
	_ = p.Close(t.Context())
	_ = fp.Close(t.Context())
}

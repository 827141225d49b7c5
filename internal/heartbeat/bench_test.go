package heartbeat_test

import (
	"context"
	"runtime"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"testing/synctest"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/sqsworker/sqsworker/internal/heartbeat"
	"github.com/sqsworker/sqsworker/sqstest"
)

// TestThousandMessagesHundredCallsPerPeriod is the schedule the benchmark
// measures, checked exactly in virtual time: 1,000 long-running messages
// received ten per receive over 2 s cost ⌈1000/10⌉ = 100 calls in every
// extension period, for ten periods, each call full.
func TestThousandMessagesHundredCallsPerPeriod(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const n, periods = 1000, 10
		e := newEnv(t, 30)
		h := newHB(t, e.rec, e.url, 30*time.Second)
		run(t, h)
		for range n / 10 {
			msgs, receivedAt := e.receive(t, 10)
			for _, m := range msgs {
				track(t, h, m.handle, receivedAt, nil)
			}
			time.Sleep(20 * time.Millisecond)
		}
		time.Sleep(e.t0.Add(periods*20*time.Second + 15*time.Second).Sub(time.Now()))
		perPeriod := make([]int, periods+1)
		for _, c := range e.rec.Calls() {
			perPeriod[int(c.at.Sub(e.t0)/(20*time.Second))]++
			if len(c.handles) != 10 || c.err != nil || len(c.failed) != 0 {
				t.Fatalf("call at %v: %d entries, error %v, failed %v; want 10 extended", c.at.Sub(e.t0), len(c.handles), c.err, c.failed)
			}
		}
		for p := 1; p <= periods; p++ {
			if perPeriod[p] != n/10 {
				t.Errorf("period %d: %d calls, want %d", p, perPeriod[p], n/10)
			}
		}
		if inflight := len(e.f.Messages(e.url, "inflight")); inflight != n {
			t.Errorf("%d of %d messages in flight", inflight, n)
		}
	})
}

// BenchmarkHeartbeat1000 measures the heartbeat with N = 1,000 long-running
// messages.
//
//   - period/sqstest and period/stub: one extension period per op — all 1,000
//     messages due at once and extended — against the sqstest fake (its own
//     cost included) and against a stub client that costs nothing, which
//     isolates the heartbeat's own CPU and allocations (Track and Stop of
//     the 1,000 leases included).
//   - realtime: 1,000 messages kept invisible for 4 real extension periods
//     (Extension 1 s, Threshold 500 ms) against the fake; ns/op is mostly
//     waiting and means nothing; calls/period is the point.
//
// Run: go test -run '^$' -bench BenchmarkHeartbeat1000 -benchmem ./internal/heartbeat/
func BenchmarkHeartbeat1000(b *testing.B) {
	const n = 1000
	b.Run("period/sqstest", func(b *testing.B) {
		e := newEnv(b, 30)
		msgs, receivedAt := e.receive(b, n)
		benchPeriods(b, &counter{API: e.f}, e.url, msgs, receivedAt)
	})
	b.Run("period/stub", func(b *testing.B) {
		msgs := make([]msg, n)
		for i := range msgs {
			msgs[i] = msg{id: strconv.Itoa(i), handle: "handle-" + strconv.Itoa(i)}
		}
		benchPeriods(b, &counter{API: newOKStub()}, "url", msgs, time.Now())
	})
	b.Run("realtime", func(b *testing.B) {
		const periods = 4
		var calls, entries int64
		for b.Loop() {
			e := newEnv(b, 1)
			msgs, receivedAt := e.receive(b, n)
			c := &counter{API: e.f}
			h := newHB(b, c, e.url, time.Second) // Extension 1 s, Threshold 500 ms: a period is 500 ms
			for _, m := range msgs {
				track(b, h, m.handle, receivedAt, func(err error) { b.Errorf("lost: %v", err) })
			}
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan error)
			go func() { done <- h.Run(ctx) }()
			time.Sleep(receivedAt.Add(periods*500*time.Millisecond + 250*time.Millisecond).Sub(time.Now()))
			cancel()
			<-done
			if inflight := len(e.f.Messages(e.url, "inflight")); inflight != n {
				b.Fatalf("%d of %d messages in flight after %d periods", inflight, n, periods)
			}
			s := h.Stats()
			calls += s.Calls
			entries += s.Extended
		}
		b.ReportMetric(float64(calls)/float64(b.N*periods), "calls/period")
		b.ReportMetric(float64(entries)/float64(calls), "entries/call")
	})
}

// benchPeriods makes every op one extension period of msgs: track them all,
// due at once; run the heartbeat until every one is extended; stop them.
func benchPeriods(b *testing.B, c *counter, url string, msgs []msg, receivedAt time.Time) {
	h := newHB(b, c, url, 30*time.Second)
	leases := make([]*heartbeat.Lease, len(msgs))
	b.ReportAllocs()
	for b.Loop() {
		due := time.Now().Add(h.Threshold()) // a deadline one threshold away: due now
		for i, m := range msgs {
			leases[i] = trackUntil(b, h, m.handle, receivedAt, due, nil)
		}
		done := c.expect(int64(len(msgs)))
		ctx, cancel := context.WithCancel(context.Background())
		runDone := make(chan error)
		go func() { runDone <- h.Run(ctx) }()
		<-done
		cancel()
		<-runDone
		for _, l := range leases {
			l.Stop()
		}
	}
	s := h.Stats()
	if s.Extended != int64(b.N*len(msgs)) || s.Failures() != 0 || s.Late != 0 {
		b.Fatalf("Stats = %+v after %d periods", s, b.N)
	}
	b.ReportMetric(float64(s.Calls)/float64(b.N), "calls/period")
	b.ReportMetric(float64(s.Extended)/float64(s.Calls), "entries/call")
}

// counter counts the entries of ChangeMessageVisibilityBatch calls and
// closes a channel when an expected number has gone through.
type counter struct {
	heartbeat.API
	mu      sync.Mutex
	entries int64
	want    int64
	done    chan struct{}
}

// expect returns a channel closed once k more entries have gone through.
func (c *counter) expect(k int64) <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.want = c.entries + k
	c.done = make(chan struct{})
	return c.done
}

func (c *counter) ChangeMessageVisibilityBatch(ctx context.Context, in *sqs.ChangeMessageVisibilityBatchInput, optFns ...func(*sqs.Options)) (*sqs.ChangeMessageVisibilityBatchOutput, error) {
	out, err := c.API.ChangeMessageVisibilityBatch(ctx, in, optFns...)
	c.mu.Lock()
	c.entries += int64(len(in.Entries))
	if c.done != nil && c.entries >= c.want {
		close(c.done)
		c.done = nil
	}
	c.mu.Unlock()
	return out, err
}

// okStub reports every entry extended, from outputs built once, so it adds
// no allocations of its own. The heartbeat numbers entries 0…k−1.
type okStub struct {
	outs [10 + 1]*sqs.ChangeMessageVisibilityBatchOutput
}

func newOKStub() *okStub {
	s := &okStub{}
	for k := range s.outs {
		out := &sqs.ChangeMessageVisibilityBatchOutput{}
		for i := range k {
			out.Successful = append(out.Successful, types.ChangeMessageVisibilityBatchResultEntry{Id: aws.String(strconv.Itoa(i))})
		}
		s.outs[k] = out
	}
	return s
}

func (s *okStub) ChangeMessageVisibilityBatch(ctx context.Context, in *sqs.ChangeMessageVisibilityBatchInput, optFns ...func(*sqs.Options)) (*sqs.ChangeMessageVisibilityBatchOutput, error) {
	return s.outs[len(in.Entries)], nil
}

// BenchmarkHeartbeat120000At20ms holds 120,000 messages — SQS's in-flight
// limit for a standard queue — all due at once, through two extension
// periods in real time, every ChangeMessageVisibilityBatch taking 20 ms:
// 12,000 calls due together, to be confirmed within the 10 s threshold.
// The messages are received ten per receive with a 600 s visibility
// timeout (so that receiving them from the in-memory SQS, which took 2.5
// minutes on a loaded machine, does not eat into their time) and tracked with a
// deadline 30 s after the last receive, earlier than SQS's: the heartbeat
// extends each by 30 s. Late extensions are counted against that earlier
// deadline. Besides late and lost extensions it reports the process's CPU
// and allocations from the first Track to the end of Run, the in-memory
// SQS's share included. TestSQSInFlightLimitAt20ms checks the same
// arithmetic in virtual time.
//
// Run: go test -run '^$' -bench 'BenchmarkHeartbeat(120000|50000)At20ms' -benchtime 1x -count 1 ./internal/heartbeat/
func BenchmarkHeartbeat120000At20ms(b *testing.B) { benchAtScale(b, 120000) }

// BenchmarkHeartbeat50000At20ms is BenchmarkHeartbeat120000At20ms with
// 50,000 messages.
func BenchmarkHeartbeat50000At20ms(b *testing.B) { benchAtScale(b, 50000) }

// benchAtScale keeps n messages, all due at once, invisible for two periods
// in real time at 20 ms per call.
func benchAtScale(b *testing.B, n int) {
	const periods = 2
	var calls, extended, late, lost, mallocs int64
	var cpu time.Duration
	for b.Loop() {
		f := sqstest.For(b)
		url := f.MustCreateQueue(b, "jobs", map[string]string{"VisibilityTimeout": "600"})
		type received struct {
			handle string
			at     time.Time
		}
		msgs := make([]received, 0, n)
		for i := range n {
			f.MustSend(b, url, strconv.Itoa(i))
		}
		for len(msgs) < n {
			out, err := f.ReceiveMessage(context.Background(), &sqs.ReceiveMessageInput{QueueUrl: aws.String(url), MaxNumberOfMessages: 10})
			if err != nil || len(out.Messages) == 0 {
				b.Fatalf("receive after %d of %d messages: %v", len(msgs), n, err)
			}
			at := time.Now()
			for _, m := range out.Messages {
				msgs = append(msgs, received{aws.ToString(m.ReceiptHandle), at})
			}
		}
		last := msgs[n-1].at
		if took := last.Sub(msgs[0].at); took > 500*time.Second {
			b.Fatalf("receiving %d messages took %v, too long for their 600 s visibility timeout", n, took)
		}
		f.InjectFault(sqstest.Fault{API: "ChangeMessageVisibilityBatch", Latency: 20 * time.Millisecond})
		h := newHB(b, f, url, 30*time.Second)
		before := usage()
		deadline := last.Add(30 * time.Second) // all due at once, 20 s after the last receive
		leases := make([]*heartbeat.Lease, n)
		for i, m := range msgs {
			leases[i] = trackUntil(b, h, m.handle, m.at, deadline, nil)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error)
		go func() { done <- h.Run(ctx) }()
		time.Sleep(last.Add(periods*20*time.Second + 9*time.Second).Sub(time.Now()))
		cancel()
		<-done
		for _, l := range leases {
			l.Stop()
		}
		after := usage()
		cpu += after.cpu - before.cpu
		mallocs += int64(after.mallocs - before.mallocs)
		s := h.Stats()
		if inflight := len(f.Messages(url, "inflight")); inflight != n || s.Late != 0 || s.Lost != 0 {
			b.Errorf("%d of %d messages in flight after %d periods, Stats %+v (CPU %v, %d allocations); want all, none late or lost", inflight, n, periods, s, after.cpu-before.cpu, after.mallocs-before.mallocs)
		}
		calls += s.Calls
		extended += s.Extended
		late += s.Late
		lost += s.Lost
	}
	b.ReportMetric(float64(calls)/float64(b.N*periods), "calls/period")
	b.ReportMetric(float64(extended)/float64(calls), "entries/call")
	b.ReportMetric(float64(late)/float64(b.N), "late/op")
	b.ReportMetric(float64(lost)/float64(b.N), "lost/op")
	b.ReportMetric(float64(cpu.Milliseconds())/float64(b.N*periods), "cpu-ms/period")
	b.ReportMetric(float64(mallocs)/float64(extended+late), "allocs/extension")
}

// usageNow is the process's CPU time and allocation count at one moment.
type usageNow struct {
	cpu     time.Duration
	mallocs uint64
}

func usage() usageNow {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return usageNow{cpu: time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), mallocs: ms.Mallocs}
}

// BenchmarkTrackStop measures what the worker pays the heartbeat per
// message: one Track and one Stop, from parallel goroutines, with 10,000
// other leases tracked and Run going (none of them due).
//
// Run: go test -run '^$' -bench BenchmarkTrackStop -benchmem ./internal/heartbeat/
func BenchmarkTrackStop(b *testing.B) {
	h := newHB(b, newOKStub(), "url", 30*time.Second)
	now := time.Now()
	for i := range 10000 {
		track(b, h, "handle-"+strconv.Itoa(i), now, nil)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- h.Run(ctx) }()
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			l, err := h.Track("handle", time.Now(), nil)
			if err != nil {
				b.Fatal(err)
			}
			l.Stop()
		}
	})
	cancel()
	<-done
}

package producer_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/sqsworker/sqsworker/producer"
	"github.com/sqsworker/sqsworker/sqstest"
	"github.com/sqsworker/sqsworker/worker"
)

// resizeJob is the typed job of the acceptance test.
type resizeJob struct {
	Photo string `json:"photo"`
	Width int    `json:"width"`
}

// TestTenThousandTypedJobs is the acceptance test: 10,000 typed
// jobs enqueued through the batcher take 1,000 SendMessageBatch calls (0.1
// requests per job), and a worker with a typed handler receives each once.
func TestTenThousandTypedJobs(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const n = 10_000
		f := sqstest.For(t)
		src, dlqURL := f.MustCreateQueueWithDLQ(t, "resize", 5, nil)
		p := newProducer(t, f, src)
		jobs := producer.JSON[resizeJob](p)
		pending := make([]*producer.Pending, n)
		for i := range n {
			var err error
			if pending[i], err = jobs.Enqueue(t.Context(), resizeJob{Photo: fmt.Sprintf("photo-%05d.jpg", i), Width: 640}); err != nil {
				t.Fatal(err)
			}
		}
		if err := p.Close(t.Context()); err != nil {
			t.Fatalf("Close: %v", err)
		}
		for i, pd := range pending {
			if r, err := pd.Wait(t.Context()); err != nil || r.MessageID == "" {
				t.Fatalf("job %d: %+v", i, r)
			}
		}
		st := p.Stats()
		calls := f.Requests()["SendMessageBatch"]
		t.Logf("producer: %d jobs, %d SendMessageBatch calls, %.3f requests per job", st.Sent, calls, float64(st.Requests)/float64(st.Sent))
		if calls != n/10 || st.Requests != n/10 || st.Sent != n {
			t.Errorf("%d jobs took %d calls (stats %+v), want %d", n, calls, st, n/10)
		}

		var mu sync.Mutex
		seen := make(map[string]int, n)
		h := worker.JSON(func(ctx context.Context, job resizeJob, m *worker.Message) error {
			mu.Lock()
			defer mu.Unlock()
			seen[job.Photo]++
			return nil
		})
		w, err := worker.New(f, src, h, func(o *worker.Options) {
			o.Logger = slog.New(slog.DiscardHandler)
			o.Concurrency = 50
		})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan error)
		go func() { done <- w.Run(ctx) }()
		for w.Stats().Succeeded < n {
			time.Sleep(time.Second)
		}
		cancel()
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		if len(seen) != n {
			t.Errorf("handler saw %d distinct jobs, want %d", len(seen), n)
		}
		for photo, c := range seen {
			if c != 1 {
				t.Errorf("%s handled %d times", photo, c)
			}
		}
		if left, dead := len(f.Messages(src)), len(f.Messages(dlqURL)); left != 0 || dead != 0 {
			t.Errorf("queue holds %d, DLQ %d; want both empty", left, dead)
		}
	})
}

func TestBatcherLingerAndClose(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := sqstest.For(t)
		url := f.MustCreateQueue(t, "jobs", nil)
		p := newProducer(t, f, url, func(o *producer.Options) { o.Linger = 50 * time.Millisecond })

		// Concurrent Sends share one call.
		var wg sync.WaitGroup
		for i := range 4 {
			wg.Go(func() {
				if _, err := p.Send(t.Context(), producer.Message{Body: fmt.Sprint("together-", i)}); err != nil {
					t.Error(err)
				}
			})
		}
		wg.Wait()
		if n := f.Requests()["SendMessageBatch"]; n != 1 {
			t.Errorf("4 concurrent Sends took %d calls, want 1", n)
		}

		// A lone message waits Linger, not longer.
		start := time.Now()
		if _, err := p.Send(t.Context(), producer.Message{Body: "alone"}); err != nil {
			t.Fatal(err)
		}
		if d := time.Since(start); d != 50*time.Millisecond {
			t.Errorf("a lone Send took %v, want the 50ms linger", d)
		}

		// Close flushes what waits, then refuses.
		pd, err := p.Enqueue(t.Context(), producer.Message{Body: "flushed by Close"})
		if err != nil {
			t.Fatal(err)
		}
		bad, _ := p.Enqueue(t.Context(), producer.Message{}) // fails in its Result
		if err := p.Close(t.Context()); err == nil {
			t.Error("Close returned nil; want the failed message reported")
		} else if be := (*producer.BatchError)(nil); !errors.As(err, &be) || be.Failed != 1 || be.Total != 7 {
			t.Errorf("Close = %v, want 1 of 7 enqueued messages failed", err)
		}
		if r, err := pd.Wait(t.Context()); err != nil || r.MessageID == "" {
			t.Errorf("message enqueued before Close: %+v", r)
		}
		if _, err := bad.Wait(t.Context()); !errors.Is(err, producer.ErrInvalid) {
			t.Errorf("empty message: %v, want ErrInvalid", err)
		}
		if _, err := p.Enqueue(t.Context(), producer.Message{Body: "late"}); !errors.Is(err, producer.ErrClosed) {
			t.Errorf("Enqueue after Close: %v, want ErrClosed", err)
		}
		if _, err := p.SendBatch(t.Context(), []producer.Message{{Body: "late"}}); !errors.Is(err, producer.ErrClosed) {
			t.Errorf("SendBatch after Close: %v, want ErrClosed", err)
		}
		if got := len(f.Messages(url)); got != 6 {
			t.Errorf("queue holds %d messages, want 6", got)
		}
	})
}

func TestCloseDeadlineCancelsCallsInFlight(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := sqstest.For(t)
		url := f.MustCreateQueue(t, "jobs", nil)
		f.InjectFault(sqstest.Fault{API: "SendMessageBatch", Latency: time.Minute})
		p := newProducer(t, f, url)
		pd, err := p.Enqueue(t.Context(), producer.Message{Body: "slow"})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(t.Context(), time.Second)
		defer cancel()
		if err := p.Close(ctx); !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("Close = %v, want the deadline", err)
		}
		if r, err := pd.Wait(t.Context()); err == nil {
			t.Errorf("message cut off by Close's deadline: %+v, want an error", r)
		}
	})
}

// Close keeps its deadline while Enqueue callers wait for room: with a
// full queue and every send slot held by a slow call, Close returns at its
// deadline (not after the slow call's retries), the waiting Enqueue gets
// ErrClosed, and every accepted message gets a final Result saying it was
// not sent.
func TestCloseDeadlineWithEnqueueBlocked(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := sqstest.For(t)
		url := f.MustCreateQueue(t, "jobs", nil)
		f.InjectFault(sqstest.Fault{API: "SendMessageBatch", Hang: true})
		p := newProducer(t, f, url, func(o *producer.Options) {
			o.MaxPending, o.Concurrency, o.MaxBatch = 1, 1, 1
			o.CallTimeout, o.MaxAttempts = time.Second, 3
		})
		var accepted []*producer.Pending
		for i := range 3 { // one in the call, one waiting for a slot, one in the queue
			pd, err := p.Enqueue(t.Context(), producer.Message{Body: fmt.Sprint("job-", i)})
			if err != nil {
				t.Fatal(err)
			}
			accepted = append(accepted, pd)
			synctest.Wait()
		}
		blocked := make(chan error, 1)
		go func() {
			_, err := p.Enqueue(t.Context(), producer.Message{Body: "waits for room"})
			blocked <- err
		}()
		synctest.Wait()
		select {
		case err := <-blocked:
			t.Fatalf("Enqueue on a full queue returned %v at once", err)
		default:
		}

		start := time.Now()
		ctx, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
		defer cancel()
		err := p.Close(ctx)
		if took := time.Since(start); took > 100*time.Millisecond {
			t.Errorf("Close with a 100ms deadline took %v", took)
		}
		var be *producer.BatchError
		if !errors.Is(err, context.DeadlineExceeded) || !errors.As(err, &be) || be.Failed != 3 {
			t.Errorf("Close = %v; want the deadline and 3 messages not sent", err)
		}
		if err := <-blocked; !errors.Is(err, producer.ErrClosed) {
			t.Errorf("Enqueue waiting at Close: %v; want ErrClosed", err)
		}
		for i, pd := range accepted {
			select {
			case <-pd.Done():
			default:
				t.Fatalf("message %d has no final Result after Close returned", i)
			}
			if r, err := pd.Wait(t.Context()); err == nil || !strings.Contains(err.Error(), "Close's deadline passed before the message was sent") {
				t.Errorf("message %d: %+v, %v; want an error saying Close's deadline passed before it was sent", i, r, err)
			}
		}
	})
}

func TestNewRefusesBadOptions(t *testing.T) {
	f := sqstest.For(t)
	for name, fn := range map[string]func(*producer.Options){
		"MaxBatch 11":       func(o *producer.Options) { o.MaxBatch = 11 },
		"MaxMessageSize 2M": func(o *producer.Options) { o.MaxMessageSize = 2 << 20 },
		"negative Linger":   func(o *producer.Options) { o.Linger = -1 },
	} {
		if _, err := producer.New(f, "https://q", fn); err == nil {
			t.Errorf("%s: New accepted it", name)
		}
	}
	if _, err := producer.New(nil, "https://q"); err == nil {
		t.Error("New accepted a nil client")
	}
	if _, err := producer.New(f, ""); err == nil {
		t.Error("New accepted an empty queue URL")
	}
}

func TestJSONSender(t *testing.T) {
	f := sqstest.For(t)
	url := f.MustCreateQueue(t, "jobs", nil)
	p := newProducer(t, f, url)
	defer p.Close(t.Context())
	type job struct {
		ID     int       `json:"id"`
		Poison unencoded `json:"poison,omitempty"`
	}
	jobs := producer.JSON[job](p)
	res, err := jobs.SendBatch(t.Context(), []job{{ID: 1}, {ID: 2, Poison: true}, {ID: 3}}, producer.WithDelay(time.Minute))
	if err == nil || res[1].Err == nil || res[0].Err != nil || res[2].Err != nil {
		t.Fatalf("results %+v, err %v; want only the unencodable job to fail", res, err)
	}
	msgs := f.Messages(url)
	if len(msgs) != 2 || msgs[0].Body != `{"id":1}` || msgs[0].State != "delayed" {
		t.Errorf("queue holds %+v", msgs)
	}
	if r, err := jobs.Send(t.Context(), job{ID: 4}); err != nil || r.MessageID == "" {
		t.Errorf("Send: %+v, %v", r, err)
	}
}

// unencoded fails to encode when true.
type unencoded bool

func (u unencoded) MarshalJSON() ([]byte, error) {
	if u {
		return nil, errors.New("cannot encode")
	}
	return []byte("false"), nil
}

// TestEntryFaultsInTheFake injects per-entry failures with sqstest's
// Fault.Entries while 1,000 jobs go through the batcher: every failed entry
// is retried, every job arrives once, and the retries are counted.
func TestEntryFaultsInTheFake(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := sqstest.For(t)
		url := f.MustCreateQueue(t, "jobs", nil)
		f.InjectFault(sqstest.Fault{API: "SendMessageBatch", Code: "InternalError", Entries: true, Every: 7, Times: 40})
		f.InjectFault(sqstest.Fault{API: "SendMessageBatch", Code: "RequestThrottled", Entries: true, Every: 11, Times: 20})
		p := newProducer(t, f, url)
		var pending []*producer.Pending
		for i := range 1000 {
			pd, err := p.Enqueue(t.Context(), producer.Message{Body: fmt.Sprint("job-", i)})
			if err != nil {
				t.Fatal(err)
			}
			pending = append(pending, pd)
		}
		if err := p.Close(t.Context()); err != nil {
			t.Fatalf("Close: %v", err)
		}
		retried := 0
		for _, pd := range pending {
			r, err := pd.Wait(t.Context())
			if err != nil {
				t.Fatal(err)
			}
			retried += r.Attempts - 1
		}
		st := p.Stats()
		if st.Sent != 1000 || st.Failed != 0 || st.Retried != 60 || retried != 60 {
			t.Errorf("Stats %+v, %d retries in the results; want 1000 sent after 60 entry retries", st, retried)
		}
		seen := map[string]int{}
		for _, m := range f.Messages(url) {
			seen[m.Body]++
		}
		if len(seen) != 1000 {
			t.Errorf("queue holds %d distinct jobs", len(seen))
		}
		for b, n := range seen {
			if n != 1 {
				t.Errorf("%s enqueued %d times", b, n)
			}
		}
	})
}

// TestLostResponse documents what a lost response costs: the call took
// effect, the producer cannot know, and its retry enqueues the messages
// again on a standard queue; on a FIFO queue, deduplication IDs absorb it.
func TestLostResponse(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := sqstest.For(t)
		std := f.MustCreateQueue(t, "jobs", nil)
		fifo := f.MustCreateQueue(t, "jobs.fifo", map[string]string{"FifoQueue": "true"})
		lose := sqstest.Fault{API: "SendMessageBatch", Code: "InternalError", AfterEffect: true, Times: 1}
		f.InjectFault(lose)
		if _, err := newProducer(t, f, std).SendBatch(t.Context(), bodies(3, "s")); err != nil {
			t.Fatal(err)
		}
		if n := len(f.Messages(std)); n != 6 {
			t.Errorf("standard queue holds %d messages, want 6 (each sent twice)", n)
		}
		f.InjectFault(lose)
		msgs := bodies(3, "f")
		for i := range msgs {
			msgs[i].GroupID, msgs[i].DeduplicationID = "g", msgs[i].Body
		}
		if _, err := newProducer(t, f, fifo).SendBatch(t.Context(), msgs); err != nil {
			t.Fatal(err)
		}
		if n := len(f.Messages(fifo)); n != 3 {
			t.Errorf("FIFO queue holds %d messages, want 3 (deduplicated)", n)
		}
	})
}

package unique_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/sqsworker/sqsworker/producer"
	"github.com/sqsworker/sqsworker/unique"
	"github.com/sqsworker/sqsworker/worker"
)

// debounceRun is one run of a debounced job, as the handler saw it.
type debounceRun struct {
	body string
	at   time.Time
}

// runDebounced runs a worker with the Store's Middleware on e's queue
// until ctx ends, recording each run of the handler.
func runDebounced(ctx context.Context, t *testing.T, e *env, runs *[]debounceRun, mu *sync.Mutex) error {
	h := worker.Chain(worker.HandlerFunc(func(ctx context.Context, m *worker.Message) error {
		mu.Lock()
		*runs = append(*runs, debounceRun{m.Body, time.Now()})
		mu.Unlock()
		return nil
	}), e.store.Middleware)
	w, err := worker.New(e.sqs, e.url, h, func(o *worker.Options) {
		o.Logger, o.RetryPolicy, o.Concurrency = quiet, fixedPolicy(3, time.Second), 4
		o.OnSettled = e.store.Settled
	})
	if err != nil {
		t.Fatal(err)
	}
	return w.Run(ctx)
}

// The acceptance: 50 sends of one key over 5 s with a 1 s window
// run the job once, with the last body, within window + 1 s of the last
// send; the key is then free.
func TestDebounceCollapsesSendsIntoLastBody(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, func(o *unique.Options) { o.Now, o.RecordJobID = time.Now, true })
		ctx, cancel := context.WithCancel(t.Context())
		var mu sync.Mutex
		var runs []debounceRun
		done := make(chan error, 1)
		go func() { done <- runDebounced(ctx, t, e, &runs, &mu) }()
		k := unique.Key{Name: "reindex", Debounce: time.Second}
		var ids []string
		for i := range 50 {
			res, err := e.send(t, k, fmt.Sprintf("request %d", i))
			if err != nil {
				t.Fatalf("send %d: %v", i, err)
			}
			ids = append(ids, res.MessageID)
			if i < 49 {
				time.Sleep(100 * time.Millisecond)
			}
		}
		last := time.Now()
		time.Sleep(10 * time.Second)
		cancel()
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		if len(runs) != 1 {
			t.Fatalf("the job ran %d times: %+v", len(runs), runs)
		}
		if runs[0].body != "request 49" {
			t.Errorf("the job ran with %q, not the last body", runs[0].body)
		}
		if lag := runs[0].at.Sub(last); lag < time.Second || lag > 2*time.Second {
			t.Errorf("the job ran %v after the last send; want within the window (1 s) + 1 s, not before the window", lag)
		}
		for i, id := range ids {
			if id != ids[0] || id == "" {
				t.Errorf("send %d reported job %q, not %q", i, id, ids[0])
			}
		}
		st := e.store.Stats()
		if st.Claimed != 1 || st.Debounced != 49 || st.Released != 1 {
			t.Errorf("Stats %+v", st)
		}
		if left := keys(e.db); len(left) != 0 {
			t.Errorf("keys left after the job: %v", left)
		}
	})
}

// MaxDelay runs a job whose sends never go quiet at most MaxDelay after
// the first; the sends after it has started are refused until it is
// settled, then start a new job.
func TestDebounceMaxDelayAndRunningKeyHeld(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, func(o *unique.Options) { o.Now = time.Now })
		ctx, cancel := context.WithCancel(t.Context())
		var mu sync.Mutex
		var runs []debounceRun
		release := make(chan struct{})
		h := worker.Chain(worker.HandlerFunc(func(ctx context.Context, m *worker.Message) error {
			mu.Lock()
			runs = append(runs, debounceRun{m.Body, time.Now()})
			n := len(runs)
			mu.Unlock()
			if n == 1 {
				<-release
			}
			return nil
		}), e.store.Middleware)
		w, err := worker.New(e.sqs, e.url, h, func(o *worker.Options) {
			o.Logger, o.Concurrency, o.OnSettled = quiet, 2, e.store.Settled
		})
		if err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { done <- w.Run(ctx) }()
		k := unique.Key{Name: "sync", Debounce: 2 * time.Second, MaxDelay: 5 * time.Second}
		start := time.Now()
		refused := 0
		for i := range 40 { // a send every 250 ms for 10 s: never quiet
			if _, err := e.send(t, k, fmt.Sprint("v", i)); errors.Is(err, unique.ErrDuplicate) {
				refused++
			} else if err != nil {
				t.Fatal(err)
			}
			time.Sleep(250 * time.Millisecond)
		}
		mu.Lock()
		first := runs[0]
		mu.Unlock()
		if lag := first.at.Sub(start); lag < 5*time.Second || lag > 6*time.Second {
			t.Errorf("the first job ran %v after the first send; MaxDelay is 5 s", lag)
		}
		if refused == 0 {
			t.Error("no send was refused while the job ran")
		}
		close(release)
		time.Sleep(2 * time.Second) // the deletion's batch is flushed and confirmed
		if _, err := e.send(t, k, "after"); err != nil {
			t.Fatalf("after the job was settled: %v", err)
		}
		time.Sleep(5 * time.Second)
		cancel()
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		if len(runs) != 2 || runs[1].body != "after" {
			t.Fatalf("runs %+v", runs)
		}
		if !strings.HasPrefix(first.body, "v") {
			t.Errorf("first body %q", first.body)
		}
	})
}

// Debounce's preconditions are checked before anything is sent.
func TestDebounceRefusesBadSends(t *testing.T) {
	e := newEnv(t)
	for name, c := range map[string]struct {
		k unique.Key
		m producer.Message
	}{
		"both modes":   {unique.Key{Name: "a", For: time.Minute, Debounce: time.Second}, producer.Message{Body: "x"}},
		"delay":        {unique.Key{Name: "a", Debounce: time.Second}, producer.Message{Body: "x", Delay: time.Second}},
		"too big":      {unique.Key{Name: "a", Debounce: time.Second}, producer.Message{Body: strings.Repeat("x", 400_000)}},
		"cap no mode":  {unique.Key{Name: "a", MaxDelay: time.Second}, producer.Message{Body: "x"}},
		"negative cap": {unique.Key{Name: "a", Debounce: time.Second, MaxDelay: -1}, producer.Message{Body: "x"}},
	} {
		if _, err := e.store.Send(t.Context(), e.p, c.k, c.m); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
	if n := len(e.sqs.Messages(e.url)); n != 0 {
		t.Errorf("%d messages sent", n)
	}
}

// A repeated delivery of a debounced job that has finished (its key
// released) is dropped without running the handler.
func TestDebounceStaleDeliveryDropped(t *testing.T) {
	e := newEnv(t)
	if _, err := e.send(t, unique.Key{Name: "k", Debounce: time.Second}, "b"); err != nil {
		t.Fatal(err)
	}
	msgs := e.sqs.Messages(e.url)
	if len(msgs) != 1 {
		t.Fatalf("%d messages", len(msgs))
	}
	if _, err := e.store.Release(t.Context(), "k"); err != nil {
		t.Fatal(err)
	}
	ran := false
	h := e.store.Middleware(worker.HandlerFunc(func(context.Context, *worker.Message) error { ran = true; return nil }))
	if err := h.Handle(t.Context(), &worker.Message{ID: msgs[0].ID, Body: msgs[0].Body, MessageAttributes: msgs[0].Attributes}); err != nil || ran {
		t.Fatalf("err %v, ran %v", err, ran)
	}
}

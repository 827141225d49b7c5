package unique_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/sqsworker/sqsworker/dlq"
	"github.com/sqsworker/sqsworker/harness/testenv"
	"github.com/sqsworker/sqsworker/producer"
	"github.com/sqsworker/sqsworker/retry"
	"github.com/sqsworker/sqsworker/unique"
	"github.com/sqsworker/sqsworker/worker"
)

// emulator is a keys table on DynamoDB Local and a queue with its DLQ on
// the SQS emulator.
type emulator struct {
	db       *dynamodb.Client
	table    string
	sqs      *sqs.Client
	src, dlq string
	fifo     bool
}

func newEmulator(t *testing.T, fifo bool) *emulator {
	t.Helper()
	e := &emulator{db: testenv.DynamoDB(t), table: testenv.UniqueName("unique"), sqs: testenv.SQS(t), fifo: fifo}
	if err := unique.CreateTable(t.Context(), e.db, e.table, 0); err != nil {
		t.Fatalf("CreateTable: %v", err)
	}
	t.Cleanup(func() {
		_, _ = e.db.DeleteTable(context.Background(), &dynamodb.DeleteTableInput{TableName: aws.String(e.table)})
	})
	setup, err := dlq.Setup(t.Context(), e.sqs, dlq.SetupOptions{
		Name: testenv.UniqueName("uq"), FIFO: fifo, ContentBasedDeduplication: fifo,
		MaxReceiveCount: 10, VisibilityTimeout: 10 * time.Second,
	})
	if err != nil {
		t.Fatalf("dlq.Setup: %v", err)
	}
	e.src, e.dlq = setup.Target().SourceURL, setup.Target().DLQURL
	return e
}

// process is what one producing process holds: its own Store and
// Producer.
func (e *emulator) process(t *testing.T, optFns ...func(*unique.Options)) (*unique.Store, *producer.Producer) {
	t.Helper()
	s, err := unique.New(e.db, e.table, append([]func(*unique.Options){func(o *unique.Options) { o.Logger = quiet }}, optFns...)...)
	if err != nil {
		t.Fatal(err)
	}
	p, err := producer.New(e.sqs, e.src)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close(context.Background()) })
	return s, p
}

func (e *emulator) message(body string) producer.Message {
	m := producer.Message{Body: body}
	if e.fifo {
		m.GroupID = "g-" + body
	}
	return m
}

// run runs a worker on the queue until done reports true, its
// settlements going to store.
func (e *emulator) run(t *testing.T, store *unique.Store, h worker.HandlerFunc, done func() bool) {
	t.Helper()
	w, err := worker.New(e.sqs, e.src, h, func(o *worker.Options) {
		o.Logger, o.Concurrency, o.RetryPolicy, o.WaitTime = quiet, 20, fixedPolicy(3, time.Second), 2*time.Second
		o.OnSettled = store.Settled
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	ran := make(chan error, 1)
	go func() { ran <- w.Run(ctx) }()
	deadline := time.After(2 * time.Minute)
	for !done() {
		select {
		case err := <-ran:
			t.Fatalf("Run ended early: %v", err)
		case <-deadline:
			cancel()
			t.Fatalf("not done after 2 minutes: %+v", w.Stats())
		case <-time.After(100 * time.Millisecond):
		}
	}
	cancel()
	if err := <-ran; err != nil {
		t.Fatal(err)
	}
}

// envInt reads a size from the environment (for the full acceptance run).
func envInt(name string, def int) int {
	if n, err := strconv.Atoi(os.Getenv(name)); err == nil && n > 0 {
		return n
	}
	return def
}

// Four producing "processes" send the same keys ten times each, at once:
// exactly one job per key is enqueued and runs, and no key is left held.
// On a FIFO queue here; TestEmulatorProcessesOneJobPerKey runs the
// standard queue's case with 4 OS processes. UNIQUE_KEYS sets the keys
// (UNIQUE_KEYS=1000 UNIQUE_BOTH_QUEUES=1 runs the standard queue too).
func TestEmulatorConcurrentSendersOneJobPerKey(t *testing.T) {
	queues := []bool{true}
	if os.Getenv("UNIQUE_BOTH_QUEUES") == "1" {
		queues = []bool{false, true}
	}
	for _, fifo := range queues {
		t.Run(fmt.Sprintf("fifo=%v", fifo), func(t *testing.T) {
			e := newEmulator(t, fifo)
			keys := envInt("UNIQUE_KEYS", 100)
			const procs, rounds = 4, 10
			stores := make([]*unique.Store, procs)
			var accepted, refused atomic.Int64
			var wg sync.WaitGroup
			t0 := time.Now()
			for i := range procs {
				s, p := e.process(t)
				stores[i] = s
				wg.Go(func() {
					var inner sync.WaitGroup
					for r := range rounds {
						inner.Go(func() {
							for k := range keys {
								kk := (k + r*7 + i*13) % keys // each sender its own order
								_, err := s.Send(t.Context(), p, unique.Key{Name: "key-" + strconv.Itoa(kk)}, e.message(strconv.Itoa(kk)))
								switch {
								case err == nil:
									accepted.Add(1)
								case errors.Is(err, unique.ErrDuplicate):
									refused.Add(1)
								default:
									t.Errorf("send: %v", err)
								}
							}
						})
					}
					inner.Wait()
				})
			}
			wg.Wait()
			sendTime := time.Since(t0)
			if accepted.Load() != int64(keys) || refused.Load() != int64(keys*(procs*rounds-1)) {
				t.Fatalf("%d accepted, %d refused; want %d and %d", accepted.Load(), refused.Load(), keys, keys*(procs*rounds-1))
			}
			var mu sync.Mutex
			ran := map[string]int{}
			e.run(t, stores[0], func(ctx context.Context, m *worker.Message) error {
				mu.Lock()
				ran[m.Body]++
				mu.Unlock()
				return nil
			}, func() bool {
				mu.Lock()
				defer mu.Unlock()
				return len(ran) == keys && stores[0].Stats().Released == int64(keys)
			})
			for b, n := range ran {
				if n != 1 {
					t.Errorf("job %s ran %d times", b, n)
				}
			}
			if held, err := stores[0].Held(t.Context()); err != nil || held != 0 {
				t.Errorf("Held = %d, %v; want 0 after every job succeeded", held, err)
			}
			var req int64
			for _, s := range stores {
				req += s.Stats().Requests
			}
			t.Logf("%d keys × %d senders × %d rounds: %d jobs, sent in %v; %d DynamoDB requests by the senders (incl. New's check)", keys, procs, rounds, len(ran), sendTime.Round(time.Millisecond), req)
		})
	}
}

// Until settled, on the emulators: a job that fails twice and then
// succeeds keeps its key through both retries, and frees it on success; a
// dead-lettered job frees it too.
func TestEmulatorUntilSettled(t *testing.T) {
	for _, fifo := range []bool{false, true} {
		t.Run(fmt.Sprintf("fifo=%v", fifo), func(t *testing.T) {
			e := newEmulator(t, fifo)
			s, p := e.process(t)
			if _, err := s.Send(t.Context(), p, unique.Key{Name: "flaky"}, e.message("flaky")); err != nil {
				t.Fatal(err)
			}
			if _, err := s.Send(t.Context(), p, unique.Key{Name: "poison"}, e.message("poison")); err != nil {
				t.Fatal(err)
			}
			var runs, refusedBetween atomic.Int32
			var succeeded atomic.Bool
			e.run(t, s, func(ctx context.Context, m *worker.Message) error {
				if m.Body == "poison" {
					return retry.Permanent(errors.New("bad input"))
				}
				if _, err := s.Send(ctx, p, unique.Key{Name: "flaky"}, e.message("again")); errors.Is(err, unique.ErrDuplicate) {
					refusedBetween.Add(1)
				} else {
					t.Errorf("a send while the job is held: %v", err)
				}
				if runs.Add(1) <= 2 {
					return errors.New("transient")
				}
				succeeded.Store(true)
				return nil
			}, func() bool { return succeeded.Load() && s.Stats().Released == 2 })
			if refusedBetween.Load() != 3 {
				t.Errorf("%d sends refused while held, want 3", refusedBetween.Load())
			}
			for _, k := range []string{"flaky", "poison"} {
				if _, err := s.Send(t.Context(), p, unique.Key{Name: k}, e.message(k)); err != nil {
					t.Errorf("key %s still held after its job settled: %v", k, err)
				}
			}
		})
	}
}

// TestEmulatorRequestsPerJob measures DynamoDB requests per unique job on
// the happy path (send, run, delete), for BENCHMARKS.md.
func TestEmulatorRequestsPerJob(t *testing.T) {
	for _, c := range []struct{ record, middleware bool }{{false, false}, {true, false}, {false, true}} {
		t.Run(fmt.Sprintf("RecordJobID=%v,Middleware=%v", c.record, c.middleware), func(t *testing.T) {
			record := c.record
			e := newEmulator(t, false)
			s, p := e.process(t, func(o *unique.Options) { o.RecordJobID = record })
			const n = 50
			before := s.Stats().Requests
			for i := range n {
				if _, err := s.Send(t.Context(), p, unique.Key{Name: "job-" + strconv.Itoa(i)}, e.message(strconv.Itoa(i))); err != nil {
					t.Fatal(err)
				}
			}
			var ran atomic.Int32
			h := worker.HandlerFunc(func(context.Context, *worker.Message) error { ran.Add(1); return nil })
			if c.middleware {
				h = s.Middleware(h).Handle // the release made before the delete, Settled then makes none
			}
			e.run(t, s, h, func() bool { return s.Stats().Released == n })
			per := float64(s.Stats().Requests-before) / n
			t.Logf("RecordJobID=%v, Middleware=%v: %.2f DynamoDB writes per unique job", record, c.middleware, per)
			want := 2.0
			if record {
				want = 3
			}
			if per != want {
				t.Errorf("%.2f requests per job, want %.0f", per, want)
			}
		})
	}
}

// Debounce on DynamoDB Local and the SQS emulator (the issue's
// acceptance): 50 sends of one key over 5 s with a 1 s window run the job
// once, with the last body, within the window + 1 s of the last send.
func TestEmulatorDebounce(t *testing.T) {
	e := newEmulator(t, false)
	store, p := e.process(t)
	var mu sync.Mutex
	var bodies []string
	var ranAt time.Time
	h := worker.Chain(worker.HandlerFunc(func(ctx context.Context, m *worker.Message) error {
		mu.Lock()
		bodies = append(bodies, m.Body)
		ranAt = time.Now()
		mu.Unlock()
		return nil
	}), store.Middleware)
	w, err := worker.New(e.sqs, e.src, h, func(o *worker.Options) {
		o.Logger, o.Concurrency, o.WaitTime, o.OnSettled = quiet, 4, 2*time.Second, store.Settled
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	ran := make(chan error, 1)
	go func() { ran <- w.Run(ctx) }()
	k := unique.Key{Name: "reindex-" + testenv.UniqueName("k"), Debounce: time.Second}
	for i := range 50 {
		if _, err := store.Send(t.Context(), p, k, producer.Message{Body: fmt.Sprint("request ", i)}); err != nil {
			t.Fatalf("send %d: %v", i, err)
		}
		if i < 49 {
			time.Sleep(100 * time.Millisecond)
		}
	}
	last := time.Now()
	time.Sleep(4 * time.Second)
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline) && store.Stats().Released == 0; {
		time.Sleep(100 * time.Millisecond)
	}
	cancel()
	if err := <-ran; err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(bodies) != 1 || bodies[0] != "request 49" {
		t.Fatalf("the job ran with %q; want once with the last body", bodies)
	}
	if lag := ranAt.Sub(last); lag > 2*time.Second {
		t.Errorf("the job ran %v after the last send; want at most the window (1 s) + 1 s", lag)
	}
	if n, err := store.Held(t.Context()); err != nil || n != 0 {
		t.Errorf("Held = %d, %v after the job", n, err)
	}
	t.Logf("ran %v after the last send; %+v", ranAt.Sub(last), store.Stats())
}

package unique_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/sqsworker/sqsworker/dlq"
	"github.com/sqsworker/sqsworker/harness/testenv"
	"github.com/sqsworker/sqsworker/producer"
	"github.com/sqsworker/sqsworker/unique"
	"github.com/sqsworker/sqsworker/worker"
)

// killChildEnv, set to "QUEUE-URL TABLE MARKER", makes the test binary a
// consumer that starts the job, writes MARKER and hangs until it is
// killed.
const killChildEnv = "UNIQUE_KILL_CHILD"

func TestMain(m *testing.M) {
	if raw := os.Getenv(sendChildEnv); raw != "" {
		if err := runSendChild(raw); err != nil {
			fmt.Fprintln(os.Stderr, "unique send child:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	if raw := os.Getenv(killChildEnv); raw != "" {
		if err := runKillChild(raw); err != nil {
			fmt.Fprintln(os.Stderr, "unique kill child:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func runKillChild(raw string) error {
	var queue, table, marker string
	if _, err := fmt.Sscan(raw, &queue, &table, &marker); err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	sq, db, err := childClients(ctx)
	if err != nil {
		return err
	}
	store, err := unique.New(db, table, func(o *unique.Options) { o.Logger = quiet })
	if err != nil {
		return err
	}
	w, err := worker.New(sq, queue, worker.HandlerFunc(func(ctx context.Context, m *worker.Message) error {
		if err := os.WriteFile(marker, []byte(m.ID), 0o644); err != nil {
			return err
		}
		<-ctx.Done() // mid-job until SIGKILL
		return ctx.Err()
	}), func(o *worker.Options) {
		o.Logger, o.Concurrency, o.WaitTime, o.OnSettled = quiet, 1, time.Second, store.Settled
	})
	if err != nil {
		return err
	}
	return w.Run(ctx)
}

// The acceptance: a consumer killed with kill -9 mid-job keeps
// the key (a send is refused) until the job, received again once its
// visibility timeout ends, is settled by the next consumer.
func TestEmulatorKilledConsumerKeepsKey(t *testing.T) {
	e := newEmulator(t, false)
	setup, err := dlq.Setup(t.Context(), e.sqs, dlq.SetupOptions{
		Name: testenv.UniqueName("uqkill"), MaxReceiveCount: 10, VisibilityTimeout: 2 * time.Second,
	})
	if err != nil {
		t.Fatal(err)
	}
	e.src, e.dlq = setup.Target().SourceURL, setup.Target().DLQURL
	store, p := e.process(t, func(o *unique.Options) { o.RecordJobID = true })
	k := unique.Key{Name: testenv.UniqueName("kill")}
	first, err := store.Send(t.Context(), p, k, producer.Message{Body: "job"})
	if err != nil {
		t.Fatal(err)
	}

	marker := filepath.Join(t.TempDir(), "started")
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = testenv.ChildEnv(t, killChildEnv+"="+e.src+" "+e.table+" "+marker)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if _, err := os.Stat(marker); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the child consumer did not start the job within 30 s")
		}
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	if res, err := store.Send(t.Context(), p, k, producer.Message{Body: "again"}); !errors.Is(err, unique.ErrDuplicate) || res.MessageID != first.MessageID {
		t.Fatalf("after kill -9 mid-job a send got %q, %v; want ErrDuplicate with job %s", res.MessageID, err, first.MessageID)
	}

	// The next consumer receives the job once its visibility ends and
	// settles it; until then the key stays held.
	var ran atomic.Int32
	var refusedWhileRunning atomic.Bool
	e.run(t, store, func(ctx context.Context, m *worker.Message) error {
		if _, err := store.Send(ctx, p, k, producer.Message{Body: "during"}); errors.Is(err, unique.ErrDuplicate) {
			refusedWhileRunning.Store(true)
		}
		ran.Add(1)
		return nil
	}, func() bool { return store.Stats().Released == 1 })
	if ran.Load() != 1 || !refusedWhileRunning.Load() {
		t.Fatalf("the next consumer ran the job %d times (a send while it ran refused: %v)", ran.Load(), refusedWhileRunning.Load())
	}
	if _, err := store.Send(t.Context(), p, k, producer.Message{Body: "next"}); err != nil {
		t.Fatalf("after the next consumer settled the job the key is still held: %v", err)
	}
}

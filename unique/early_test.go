package unique_test

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/sqsworker/sqsworker/unique"
	"github.com/sqsworker/sqsworker/worker"
)

// With Store.Middleware in the chain, a job whose handler succeeded frees
// its key before the runtime deletes it: a process killed between the two
// (here: the settlement never heard) leaves no key held until its expiry.
// The settlement that follows makes no second request.
func TestMiddlewareFreesKeyWhenHandlerSucceeds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, func(o *unique.Options) { o.Now = time.Now })
		k := unique.Key{Name: "sync/repo-7"}
		res, err := e.send(t, k, "job")
		if err != nil {
			t.Fatal(err)
		}
		m := e.settled(t, res.MessageID, worker.Deleted).Message
		var heldDuring bool
		h := e.store.Middleware(worker.HandlerFunc(func(ctx context.Context, m *worker.Message) error {
			_, err := e.send(t, k, "while running")
			heldDuring = errors.Is(err, unique.ErrDuplicate)
			return nil
		}))
		if err := h.Handle(t.Context(), m); err != nil {
			t.Fatal(err)
		}
		if !heldDuring {
			t.Error("a send while the handler ran was not refused")
		}
		deletes := e.db.count("DeleteItem")
		if deletes != 1 {
			t.Fatalf("%d DeleteItem calls once the handler succeeded; want the release", deletes)
		}
		// No settlement: the process died before the delete. The key is free.
		if _, err := e.send(t, k, "next"); err != nil {
			t.Fatalf("the key of a succeeded job is held after the process died before its delete: %v", err)
		}
		// The settlement of the first job, heard after all, changes nothing
		// and costs nothing.
		e.store.Settled(worker.Settlement{Message: m, Outcome: worker.Deleted})
		if got := e.db.count("DeleteItem"); got != deletes {
			t.Errorf("Settled after Middleware's release made %d more DeleteItem calls; want none", got-deletes)
		}
		if _, err := e.send(t, k, "third"); !errors.Is(err, unique.ErrDuplicate) {
			t.Errorf("the second job's key was freed by the first job's settlement: %v", err)
		}
		if st := e.store.Stats(); st.Released != 1 {
			t.Errorf("Stats.Released %d; want 1", st.Released)
		}
	})
}

// A failing handler keeps the key (the job will be retried or
// dead-lettered, and Settled decides); a release that fails in Middleware
// is made by Settled after the delete.
func TestMiddlewareKeepsKeyOnFailureAndLeavesFailedReleaseToSettled(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, func(o *unique.Options) { o.Now = time.Now; o.CallTimeout = time.Second })
		k := unique.Key{Name: "report/9"}
		res, err := e.send(t, k, "job")
		if err != nil {
			t.Fatal(err)
		}
		m := e.settled(t, res.MessageID, worker.Deleted).Message
		fail := errors.New("downstream down")
		if err := e.store.Middleware(worker.HandlerFunc(func(context.Context, *worker.Message) error { return fail })).Handle(t.Context(), m); !errors.Is(err, fail) {
			t.Fatalf("Middleware returned %v; want the handler's error", err)
		}
		if _, err := e.send(t, k, "again"); !errors.Is(err, unique.ErrDuplicate) {
			t.Fatalf("a failed job's key was freed: %v", err)
		}
		e.db.setFail(func(op string) error {
			if op == "DeleteItem" {
				return errors.New("connection refused")
			}
			return nil
		})
		if err := e.store.Middleware(worker.HandlerFunc(func(context.Context, *worker.Message) error { return nil })).Handle(t.Context(), m); err != nil {
			t.Fatalf("a failed release made the succeeded job fail: %v", err)
		}
		e.db.setFail(nil)
		if _, err := e.send(t, k, "again"); !errors.Is(err, unique.ErrDuplicate) {
			t.Fatalf("the key is free though its release failed: %v", err)
		}
		e.store.Settled(worker.Settlement{Message: m, Outcome: worker.Deleted})
		if _, err := e.send(t, k, "after the delete"); err != nil {
			t.Fatalf("Settled did not free the key whose early release failed: %v", err)
		}
	})
}

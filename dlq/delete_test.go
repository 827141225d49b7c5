package dlq

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"testing/synctest"

	"github.com/sqsworker/sqsworker/sqstest"
)

func TestDeleteRemovesOnlyMatchingAndReleasesTheRest(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f, target := fakePair(t, "orders")
		deadLetter(t, f, target, 30, nil, func(i int) Provenance {
			return Provenance{Error: fmt.Sprintf("error %d", i%3), Handler: "h"}
		})
		var deleted []string
		res, err := Delete(context.Background(), f, target.DLQURL, DeleteOptions{
			Filter:   Filter{ErrorContains: "error 1"},
			OnDelete: func(m Message) { deleted = append(deleted, m.Body) },
		})
		if err != nil {
			t.Fatalf("Delete: %v", err)
		}
		if res.Scanned != 30 || res.Matched != 10 || res.Deleted != 10 || res.Failed != 0 || len(deleted) != 10 {
			t.Fatalf("result %+v, OnDelete saw %d; want 30 scanned, 10 matched and deleted", res, len(deleted))
		}
		visible, inflight := len(f.Messages(target.DLQURL, "visible")), len(f.Messages(target.DLQURL, "inflight"))
		if visible != 20 || inflight != 0 {
			t.Fatalf("DLQ has %d visible, %d in flight; want the 20 others visible at once", visible, inflight)
		}
		for _, m := range f.Messages(target.DLQURL) {
			n := 0
			fmt.Sscanf(m.Body, "job-%d", &n)
			if n%3 == 1 {
				t.Errorf("message %s should have been deleted", m.Body)
			}
		}
	})
}

func TestDeleteRefusesTheZeroFilter(t *testing.T) {
	f, target := fakePair(t, "orders")
	deadLetter(t, f, target, 2, nil, failedWith("boom"))
	_, err := Delete(context.Background(), f, target.DLQURL, DeleteOptions{})
	if err == nil || !strings.Contains(err.Error(), "PurgeQueue") {
		t.Fatalf("Delete with no filter: err = %v; want a refusal pointing at PurgeQueue", err)
	}
	if v := len(f.Messages(target.DLQURL, "visible")); v != 2 {
		t.Fatalf("DLQ holds %d visible messages; want both kept", v)
	}
}

func TestDeleteStopsAtMax(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f, target := fakePair(t, "orders")
		deadLetter(t, f, target, 25, nil, failedWith("boom"))
		res, err := Delete(context.Background(), f, target.DLQURL, DeleteOptions{Filter: Filter{ErrorContains: "boom"}, Max: 7})
		if err != nil {
			t.Fatalf("Delete: %v", err)
		}
		if res.Deleted != 7 {
			t.Fatalf("deleted %d; want 7", res.Deleted)
		}
		if v, inflight := len(f.Messages(target.DLQURL, "visible")), len(f.Messages(target.DLQURL, "inflight")); v != 18 || inflight != 0 {
			t.Fatalf("DLQ has %d visible, %d in flight; want 18 visible", v, inflight)
		}
	})
}

// A failed delete entry is retried, as every batch call of the library is;
// one that keeps failing stays in the queue, visible again, and is reported.
func TestDeleteRetriesFailedEntriesAndKeepsWhatItCannotDelete(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f, target := fakePair(t, "orders")
		deadLetter(t, f, target, 6, nil, failedWith("boom"))
		f.InjectFault(sqstest.Fault{API: "DeleteMessageBatch", Entries: true, Code: "InternalError", Times: 2})
		res, err := Delete(context.Background(), f, target.DLQURL, DeleteOptions{Filter: Filter{ErrorContains: "boom"}})
		if err != nil || res.Deleted != 6 || res.Failed != 0 {
			t.Fatalf("transient entry failures: %+v, %v; want all 6 deleted after retries", res, err)
		}

		deadLetter(t, f, target, 4, nil, failedWith("boom"))
		remove := f.InjectFault(sqstest.Fault{API: "DeleteMessageBatch", Entries: true, Err: errors.New("AccessDenied")})
		defer remove()
		res, err = Delete(context.Background(), f, target.DLQURL, DeleteOptions{Filter: Filter{ErrorContains: "boom"}})
		if err == nil || !strings.Contains(err.Error(), "stays in the queue") || res.Deleted != 0 || res.Failed != 4 {
			t.Fatalf("lasting entry failures: %+v, %v; want all 4 reported failed and kept", res, err)
		}
		if v, inflight := len(f.Messages(target.DLQURL, "visible")), len(f.Messages(target.DLQURL, "inflight")); v != 4 || inflight != 0 {
			t.Fatalf("DLQ: %d visible, %d in flight; want the 4 not deleted visible again", v, inflight)
		}
	})
}

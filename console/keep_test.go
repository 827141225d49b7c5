package console

import (
	"context"
	"fmt"
	"net/url"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/sqsworker/sqsworker/dlq"
)

// A read serves later queries for keepFor (no receive, nothing hidden),
// then the next query reads again; an action drops it at once; the
// overview's warning outlives it.
func TestKeptReadServesQueriesThenExpires(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		x := newFixture(t, withActions)
		if _, err := x.f.SetQueueAttributes(context.Background(), &sqs.SetQueueAttributesInput{QueueUrl: aws.String(x.target.DLQURL),
			Attributes: map[string]string{"MessageRetentionPeriod": "3600"}}); err != nil {
			t.Fatal(err)
		}
		receives := func() int { return x.f.Requests()["ReceiveMessage"] }
		page, n, _ := x.searchPage(t, url.Values{"handler": {"charge"}})
		if n != 9 || !strings.Contains(page, "Read for this query") {
			t.Fatalf("first query: %d matched; want 9, read for the query:\n%s", n, page)
		}
		r0 := receives()
		read := x.h.snapshotOf(x.target.DLQURL).ReadAt
		time.Sleep(keepFor / 2)
		page, n, _ = x.searchPage(t, url.Values{"error": {"timeout"}})
		if n != 2 || receives() != r0 || !strings.Contains(page, "Answered from the kept read") {
			t.Fatalf("second query within %s: %d matched, %d receives; want 2 from the kept read, none", keepFor, n, receives()-r0)
		}
		if inflight := len(x.f.Messages(x.target.DLQURL, "inflight")); inflight != 0 {
			t.Fatalf("%d messages in flight while the read is kept; want none hidden", inflight)
		}
		time.Sleep(read.Add(keepFor).Sub(x.f.Now()))
		if page, n, _ = x.searchPage(t, url.Values{"error": {"timeout"}}); n != 2 || receives() == r0 || !strings.Contains(page, "Read for this query") {
			t.Fatalf("a query %s after the read: %d matched; want 2 from a new read", keepFor, n)
		}
		// Read again reads at once.
		r1 := receives()
		if _, n, _ = x.searchPage(t, url.Values{"error": {"timeout"}, "fresh": {"1"}}); n != 2 || receives() == r1 {
			t.Fatalf("read again: %d matched, no new receive", n)
		}
		// An action on the queue drops the kept read: the next query does
		// not list what it moved.
		cookie, token, gs := x.session(t)
		x.finish(t, x.post(t, "/queues/orders/dlq/redrive", cookie, url.Values{csrfField: {token}, "scope": {"group"}, "group": {gs["charge: timeout"][0]}}))
		if _, n, _ = x.searchPage(t, url.Values{"error": {"timeout"}}); n != 0 {
			t.Fatalf("after redriving the group the search lists %d; want 0 (a new read)", n)
		}
		// The overview's expiry warning and oldest failure outlive the kept read.
		time.Sleep(keepFor + time.Minute)
		if x.h.snapshotOf(x.target.DLQURL) != nil {
			t.Fatal("a read is kept after keepFor")
		}
		_, _, ov := x.open(t, "/")
		if !strings.Contains(ov, `<div class="bad expiring">11 expire within 24 h`) || !strings.Contains(ov, `<div class="sub">read 3m ago</div>`) {
			t.Fatalf("the overview lost the last read's summary:\n%s", ov)
		}
	})
}

// The reads kept hold at most keepBytes together: the oldest go first, and
// a read larger than that is not kept.
func TestKeptReadsAreBounded(t *testing.T) {
	x := newFixture(t)
	big := func(url string, at time.Time, bytes int) *snapshot {
		return &snapshot{QueueURL: url, ReadAt: at, Messages: []dlq.Message{{ID: url, Body: strings.Repeat("x", bytes)}}}
	}
	now := x.f.Now()
	x.h.mu.Lock()
	for i := range 3 {
		x.h.keep(fmt.Sprint("q", i), big(fmt.Sprint("q", i), now.Add(time.Duration(i)*time.Second), keepBytes/3))
	}
	kept := len(x.h.snapshots)
	x.h.keep("q3", big("q3", now.Add(3*time.Second), keepBytes/3))
	_, q0 := x.h.snapshots["q0"]
	_, q3 := x.h.snapshots["q3"]
	x.h.keep("huge", big("huge", now, keepBytes+1))
	_, huge := x.h.snapshots["huge"]
	_, summary := x.h.summaries["huge"]
	x.h.mu.Unlock()
	if kept != 2 || q0 || !q3 {
		t.Fatalf("kept %d of three thirds, then q0 %v, q3 %v; want 2 kept, the oldest dropped for the newest", kept, q0, q3)
	}
	if huge || !summary {
		t.Fatalf("a read over keepBytes: kept %v, summary %v; want not kept, its summary kept", huge, summary)
	}
}

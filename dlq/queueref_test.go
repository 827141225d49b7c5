package dlq

import (
	"context"
	"errors"
	"testing"

	"github.com/sqsworker/sqsworker/harness/sqsfake"
	"github.com/sqsworker/sqsworker/queueref"
	"github.com/sqsworker/sqsworker/sqstest"
)

// Issue 24, item 7: every dlq entry point takes a queue's name, URL or ARN
// and means the same queue by each.
func TestEntryPointsTakeANameURLOrARN(t *testing.T) {
	ctx := context.Background()
	f := sqstest.For(t)
	src, dlqURL := f.MustCreateQueueWithDLQ(t, "orders", 5, nil)
	f.MustSend(t, dlqURL, "dead")
	for _, ref := range []string{"orders", src, sqsfake.ARN(src)} {
		got, err := Discover(ctx, f, ref)
		if err != nil || got.SourceURL != src || got.DLQURL != dlqURL {
			t.Errorf("Discover(%s) = %+v, %v", ref, got, err)
		}
		if _, err := Lint(ctx, f, ref, LintOptions{}); err != nil {
			t.Errorf("Lint(%s): %v", ref, err)
		}
	}
	for _, ref := range []string{"orders-dlq", dlqURL, sqsfake.ARN(dlqURL)} {
		if c, err := Count(ctx, f, ref); err != nil || c.Visible != 1 {
			t.Errorf("Count(%s) = %+v, %v; want 1 visible", ref, c, err)
		}
		msgs, err := Inspect(ctx, f, ref, InspectOptions{})
		if err != nil || len(msgs) != 1 || msgs[0].Body != "dead" {
			t.Errorf("Inspect(%s) = %d messages, %v; want the one message", ref, len(msgs), err)
		}
		if s, err := SourcesOf(ctx, f, ref); err != nil || len(s) != 1 || s[0] != src {
			t.Errorf("SourcesOf(%s) = %v, %v", ref, s, err)
		}
	}
	for _, ref := range []string{"orders-dlq", dlqURL, sqsfake.ARN(dlqURL)} {
		if res, err := Delete(ctx, f, ref, DeleteOptions{Filter: Filter{ErrorContains: "no such error"}}); err != nil || res.Scanned != 1 || res.Deleted != 0 {
			t.Errorf("Delete(%s) = %+v, %v; want the one message looked at and kept", ref, res, err)
		}
	}
	res, err := Setup(ctx, f, SetupOptions{Name: sqsfake.ARN(src)})
	if err != nil || res.QueueURL != src || res.DLQURL != dlqURL || len(res.Changes) != 0 {
		t.Errorf("Setup by ARN = %+v, %v; want the existing pair unchanged", res, err)
	}
}

func TestEntryPointsRefuseMalformedReferences(t *testing.T) {
	ctx := context.Background()
	f := sqstest.For(t)
	for _, ref := range []string{"my orders", "arn:aws:sqs:us-east-1:orders", "https://sqs.us-east-1.amazonaws.com/"} {
		if _, err := Inspect(ctx, f, ref, InspectOptions{}); !errors.Is(err, queueref.ErrInvalid) {
			t.Errorf("Inspect(%q) = %v, want queueref.ErrInvalid", ref, err)
		}
		if _, err := Discover(ctx, f, ref); !errors.Is(err, queueref.ErrInvalid) {
			t.Errorf("Discover(%q) = %v, want queueref.ErrInvalid", ref, err)
		}
		if _, err := Setup(ctx, f, SetupOptions{Name: ref}); !errors.Is(err, queueref.ErrInvalid) {
			t.Errorf("Setup(%q) = %v, want queueref.ErrInvalid", ref, err)
		}
	}
}

// An ARN names its own account's queue: Setup does not take it for the
// client's namesake.
func TestSetupRefusesAnotherAccountsARN(t *testing.T) {
	f := sqstest.For(t)
	f.MustCreateQueueWithDLQ(t, "orders", 5, nil)
	if _, err := Setup(context.Background(), f, SetupOptions{Name: "arn:aws:sqs:us-east-1:111122223333:orders"}); err == nil {
		t.Error("Setup took another account's ARN for this account's queue")
	}
}

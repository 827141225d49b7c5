package queueref_test

import (
	"context"
	"errors"
	"testing"

	"github.com/sqsworker/sqsworker/queueref"
)

// FuzzParseARN: ARNs come from RedrivePolicies, Lambda events and SNS
// subscriptions. Parsing never panics; what it accepts prints back as
// itself, passes Check, and has a name that Name agrees on.
func FuzzParseARN(f *testing.F) {
	for _, s := range []string{
		"arn:aws:sqs:us-east-1:000000000000:orders", "arn:aws-cn:sqs:cn-north-1:123456789012:o.fifo",
		"arn:aws:sqs:::x", "arn:aws:s3:::bucket", "", ":::::", "arn:aws:sqs:us-east-1:000000000000:a:b",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		a, err := queueref.ParseARN(s)
		if err != nil {
			if !errors.Is(err, queueref.ErrInvalid) {
				t.Fatalf("ParseARN(%q) error %v does not wrap ErrInvalid", s, err)
			}
			return
		}
		if a.String() != s || queueref.Name(s) != a.Name || queueref.Check(s) != nil || queueref.Check(a.Name) != nil {
			t.Fatalf("ParseARN(%q) = %+v (%s), Name = %q, Check = %v", s, a, a, queueref.Name(s), queueref.Check(s))
		}
	})
}

// FuzzCheck: references come from users (flags, configuration). Check
// never panics; a reference it accepts names a valid queue (Name passes
// Check), and a URL it accepts resolves to itself without a call.
func FuzzCheck(f *testing.F) {
	for _, s := range []string{
		"orders", "orders.fifo", "https://sqs.us-east-1.amazonaws.com/123456789012/orders", "http://127.0.0.1:4566/000000000000/q",
		"http://[::1", "https://host/", "https://host/a/b/c.fifo", "https://u@host/q", "arn:aws:sqs:us-east-1:000000000000:orders",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if err := queueref.Check(s); err != nil {
			if !errors.Is(err, queueref.ErrInvalid) {
				t.Fatalf("Check(%q) error %v does not wrap ErrInvalid", s, err)
			}
			return
		}
		if err := queueref.Check(queueref.Name(s)); err != nil {
			t.Fatalf("Check(%q) accepted it but its name %q is not valid: %v", s, queueref.Name(s), err)
		}
		r := &recorder{url: "https://sqs.us-east-1.amazonaws.com/000000000000/x"}
		got, err := queueref.Resolve(context.Background(), r, s)
		if err != nil {
			t.Fatalf("Resolve(%q): %v", s, err)
		}
		if _, err := queueref.ParseARN(s); err != nil && len(r.calls) == 0 && got != s {
			t.Fatalf("Resolve of URL %q = %q", s, got)
		}
	})
}

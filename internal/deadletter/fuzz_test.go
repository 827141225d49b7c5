package deadletter

import (
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
)

// FuzzParseRedrivePolicy feeds RedrivePolicy attribute values, which come
// from outside (a queue anyone may have configured), to the parser: it never
// panics, every error names the attribute, and what it accepts has a target.
func FuzzParseRedrivePolicy(f *testing.F) {
	for _, s := range []string{
		`{"deadLetterTargetArn":"arn:aws:sqs:us-east-1:000000000000:orders-dlq","maxReceiveCount":5}`,
		`{"deadLetterTargetArn":"arn:aws:sqs:us-east-1:000000000000:orders-dlq","maxReceiveCount":"5"}`,
		`{"deadLetterTargetArn":""}`, `{"maxReceiveCount":1.5}`, `[]`, `null`, ``, `{`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		p, err := ParseRedrivePolicy(s)
		if err != nil {
			if !strings.Contains(err.Error(), "RedrivePolicy") {
				t.Fatalf("error %q does not name the RedrivePolicy", err)
			}
			return
		}
		if p.TargetARN == "" {
			t.Fatalf("accepted %q without a deadLetterTargetArn", s)
		}
	})
}

// FuzzProvenanceRoundTrip: provenance written in either form Move uses is
// read back by ParseProvenance as written (times at millisecond precision),
// and arbitrary attribute values never make ParseProvenance panic.
func FuzzProvenanceRoundTrip(f *testing.F) {
	f.Add("https://sqs.us-east-1.amazonaws.com/000000000000/orders", "boom", 3, int64(1700000000123), "handler", true)
	f.Add("", "", 0, int64(0), "", false)
	f.Add("q", "{\"not\": json", -1, int64(-5), "h\x00", true)
	f.Fuzz(func(t *testing.T, source, errText string, attempt int, ms int64, handler string, packed bool) {
		// Arbitrary raw attributes: no panic.
		ParseProvenance(map[string]types.MessageAttributeValue{
			AttrProvenance: {DataType: aws.String("String"), StringValue: aws.String(errText)},
			AttrAttempt:    {DataType: aws.String("Number"), StringValue: aws.String(source)},
			AttrFailedAt:   {DataType: aws.String("String"), StringValue: aws.String(handler)},
		})

		if !utf8.ValidString(source+errText+handler) || sanitize(source) != source || sanitize(errText) != errText || sanitize(handler) != handler {
			return // Move cleans such text before writing it
		}
		when := time.UnixMilli(ms % (1 << 40)).UTC()
		p := Provenance{SourceQueue: source, Error: errText, Attempt: attempt, FirstReceived: when, FailedAt: when, Handler: handler}
		attrs := separateAttributes(p)
		if packed {
			attrs = jsonAttribute(p, "")
		}
		got, _ := ParseProvenance(attrs)
		if got.SourceQueue != p.SourceQueue || got.Error != p.Error || got.Handler != p.Handler {
			t.Fatalf("round trip: wrote %+v, read %+v", p, got)
		}
		if attempt > 0 && got.Attempt != p.Attempt { // Move writes attempts from 1 on
			t.Fatalf("attempt: wrote %d, read %d", p.Attempt, got.Attempt)
		}
		if !got.FailedAt.Equal(p.FailedAt) && !(p.FailedAt.IsZero() || ms%(1<<40) == 0) {
			t.Fatalf("failed-at: wrote %v, read %v", p.FailedAt, got.FailedAt)
		}
	})
}

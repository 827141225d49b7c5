package s3payload_test

import (
	"context"
	"errors"
	"maps"
	"strconv"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	s3types "github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/sqsworker/sqsworker/producer"
	"github.com/sqsworker/sqsworker/retry"
	"github.com/sqsworker/sqsworker/s3payload"
	"github.com/sqsworker/sqsworker/worker"
)

func newStore(t *testing.T, client s3payload.API, optFns ...func(*s3payload.Options)) *s3payload.Store {
	t.Helper()
	s, err := s3payload.New(client, "payloads", optFns...)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestFixturesAreRead gives the middleware each extended client's wire
// format (testdata) and checks that the handler sees the original body.
func TestFixturesAreRead(t *testing.T) {
	for _, f := range fixtures(t) {
		s3c := newMemS3()
		s3c.objects[f.Object.Bucket+"/"+f.Object.Key] = []byte(f.payload())
		store := newStore(t, s3c)
		attrs := f.attributes()
		attrs["tenant"] = types.MessageAttributeValue{DataType: aws.String("String"), StringValue: aws.String("acme")}
		raw := types.Message{MessageId: aws.String(f.Message.MessageID), Body: aws.String(f.Message.Body), MessageAttributes: attrs}
		m := &worker.Message{ID: f.Message.MessageID, Body: f.Message.Body, MessageAttributes: attrs, Raw: raw}
		var body string
		var seen map[string]types.MessageAttributeValue
		h := store.Middleware()(worker.HandlerFunc(func(ctx context.Context, m *worker.Message) error {
			body, seen = m.Body, m.MessageAttributes
			return nil
		}))
		if err := h.Handle(t.Context(), m); err != nil {
			t.Errorf("%s: %v", f.Name, err)
			continue
		}
		if body != f.payload() {
			t.Errorf("%s: handler got a body of %d bytes, want the %d-byte payload", f.Name, len(body), f.Object.Size)
		}
		if len(seen) != 1 || aws.ToString(seen["tenant"].StringValue) != "acme" {
			t.Errorf("%s: handler saw attributes %v; want the user's only", f.Name, seen)
		}
		if aws.ToString(m.Raw.Body) != f.Message.Body || len(m.Raw.MessageAttributes) != 2 {
			t.Errorf("%s: the raw message changed: the runtime must settle the pointer as received", f.Name)
		}
		if deleted, err := store.Delete(t.Context(), raw); !deleted || err != nil || s3c.count() != 0 {
			t.Errorf("%s: Delete = %v, %v; %d objects left", f.Name, deleted, err, s3c.count())
		}
	}
}

func TestOffload(t *testing.T) {
	s3c := newMemS3()
	store := newStore(t, s3c, func(o *s3payload.Options) {
		o.Threshold = 1000
		o.KeyPrefix = "jobs/"
		o.PutObject = func(in *s3.PutObjectInput) { in.ServerSideEncryption = s3types.ServerSideEncryptionAwsKms }
	})
	small := &producer.Message{Body: strings.Repeat("s", 990)}
	if off, err := store.Offload(t.Context(), small); off || err != nil || len(small.Body) != 990 {
		t.Errorf("small message: offloaded %v, %v", off, err)
	}
	// Attributes count toward the threshold, as SQS counts them.
	big := &producer.Message{Body: strings.Repeat("b", 990), Attributes: map[string]types.MessageAttributeValue{
		"tenant": {DataType: aws.String("String"), StringValue: aws.String("acme")},
	}}
	off, err := store.Offload(t.Context(), big)
	if !off || err != nil {
		t.Fatalf("990 bytes + attributes over a 1000-byte threshold: offloaded %v, %v", off, err)
	}
	p, size, ok, err := s3payload.Lookup(big.Body, big.Attributes)
	if !ok || err != nil || size != 990 || p.Bucket != "payloads" || !strings.HasPrefix(p.Key, "jobs/") || len(p.Key) != len("jobs/")+36 {
		t.Errorf("pointer %v size %d (%v, %v)", p, size, ok, err)
	}
	if _, legacy := big.Attributes["SQSLargePayloadSize"]; !legacy {
		t.Errorf("attributes %v; want the size under %s by default", big.Attributes, "SQSLargePayloadSize")
	}
	if got := string(s3c.objects["payloads/"+p.Key]); got != strings.Repeat("b", 990) {
		t.Errorf("object holds %d bytes", len(got))
	}
	if s3c.puts[0].ServerSideEncryption != s3types.ServerSideEncryptionAwsKms {
		t.Error("Options.PutObject not applied")
	}

	current := newStore(t, s3c, func(o *s3payload.Options) { o.AlwaysOffload, o.SizeAttribute = true, "ExtendedPayloadSize" })
	tiny := &producer.Message{Body: "x"}
	if off, err := current.Offload(t.Context(), tiny); !off || err != nil || aws.ToString(tiny.Attributes["ExtendedPayloadSize"].StringValue) != "1" {
		t.Errorf("AlwaysOffload with AttrSize: %v, %v, %v", off, err, tiny.Attributes)
	}

	reserved := &producer.Message{Body: "x", Attributes: map[string]types.MessageAttributeValue{"ExtendedPayloadSize": {DataType: aws.String("Number"), StringValue: aws.String("1")}}}
	if _, err := store.Offload(t.Context(), reserved); err == nil {
		t.Error("a user attribute named like the size attribute was accepted")
	}
	full := &producer.Message{Body: strings.Repeat("f", 2000), Attributes: map[string]types.MessageAttributeValue{}}
	for i := range 10 {
		full.Attributes[strconv.Itoa(i)] = types.MessageAttributeValue{DataType: aws.String("String"), StringValue: aws.String("v")}
	}
	if _, err := store.Offload(t.Context(), full); err == nil || !strings.Contains(err.Error(), "one attribute for its size") {
		t.Errorf("ten attributes and a large body: %v", err)
	}
}

func TestNewRefusesBadOptions(t *testing.T) {
	for name, fn := range map[string]func(*s3payload.Options){
		"prefix with a space": func(o *s3payload.Options) { o.KeyPrefix = "my jobs/" },
		"unknown attribute":   func(o *s3payload.Options) { o.SizeAttribute = "Size" },
		"negative threshold":  func(o *s3payload.Options) { o.Threshold = -1 },
	} {
		if _, err := s3payload.New(newMemS3(), "b", fn); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	if _, err := s3payload.New(newMemS3(), ""); err == nil {
		t.Error("empty bucket accepted")
	}
	if _, err := s3payload.New(nil, "b"); err == nil {
		t.Error("nil client accepted")
	}
}

func TestMiddlewareFailures(t *testing.T) {
	pointer := func(key string) *worker.Message {
		attrs := map[string]types.MessageAttributeValue{"ExtendedPayloadSize": {DataType: aws.String("Number"), StringValue: aws.String("3")}}
		body := s3payload.Pointer{Bucket: "payloads", Key: key}.Body()
		return &worker.Message{ID: "m-" + key, Body: body, MessageAttributes: attrs}
	}
	ran := false
	next := worker.HandlerFunc(func(ctx context.Context, m *worker.Message) error { ran = true; return nil })
	s3c := newMemS3()
	s3c.objects["payloads/big"] = []byte(strings.Repeat("x", 2000))
	store := newStore(t, s3c, func(o *s3payload.Options) { o.MaxPayloadSize = 1000 })
	h := store.Middleware()(next)

	bad := pointer("k")
	bad.Body = "not a pointer"
	for _, tc := range []struct {
		name      string
		m         *worker.Message
		permanent bool
		want      string
	}{
		{"body not a pointer", bad, true, "not an S3 payload pointer"},
		{"object missing", pointer("gone"), true, "does not exist"},
		{"object too large", pointer("big"), true, "MaxPayloadSize"},
	} {
		ran = false
		err := h.Handle(t.Context(), tc.m)
		if err == nil || errors.Is(err, retry.ErrPermanent) != tc.permanent || !strings.Contains(err.Error(), tc.want) || ran {
			t.Errorf("%s: %v (permanent %v, handler ran %v); want a permanent error mentioning %q", tc.name, err, errors.Is(err, retry.ErrPermanent), ran, tc.want)
		}
	}
	s3c.failGet = errors.New("connection reset")
	if err := h.Handle(t.Context(), pointer("k")); err == nil || errors.Is(err, retry.ErrPermanent) {
		t.Errorf("S3 unreachable: %v; want an ordinary error (retried)", err)
	}
	plain := &worker.Message{Body: `["software.amazon.payloadoffloading.PayloadS3Pointer",{"s3BucketName":"b","s3Key":"k"}]`}
	ran = false
	if err := h.Handle(t.Context(), plain); err != nil || !ran || s3c.gets != 3 {
		t.Errorf("message without the size attribute: %v, ran %v; want it passed on untouched", err, ran)
	}
	if deleted, err := store.Delete(t.Context(), types.Message{Body: aws.String("plain")}); deleted || err != nil {
		t.Errorf("Delete of an ordinary message: %v, %v", deleted, err)
	}
	raw := types.Message{Body: aws.String(pointer("gone").Body), MessageAttributes: maps.Clone(pointer("gone").MessageAttributes)}
	if deleted, err := store.Delete(t.Context(), raw); !deleted || err != nil {
		t.Errorf("Delete of an object already gone: %v, %v; want done, no error", deleted, err)
	}
}

// TestSettledDeletesOnlyAfterTheDelete checks the settlement hook: the
// object goes with a Deleted settlement confirmed in time, and stays for
// every other outcome (Delayed too: a re-sent copy carries the same
// pointer) and for a Deleted one confirmed Late (another consumer may
// hold the message and must still find its object).
func TestSettledDeletesOnlyAfterTheDelete(t *testing.T) {
	s3c := newMemS3()
	store := newStore(t, s3c)
	m := &producer.Message{Body: "x"}
	force := newStore(t, s3c, func(o *s3payload.Options) { o.AlwaysOffload = true })
	if _, err := force.Offload(t.Context(), m); err != nil {
		t.Fatal(err)
	}
	msg := &worker.Message{Body: m.Body, MessageAttributes: m.Attributes, Raw: types.Message{Body: aws.String(m.Body), MessageAttributes: m.Attributes}}
	for _, o := range []worker.Outcome{worker.Retrying, worker.DeadLettered, worker.Released, worker.Lost, worker.Abandoned, worker.Snoozed, worker.Delayed} {
		store.Settled(worker.Settlement{Message: msg, Outcome: o})
		if s3c.count() != 1 {
			t.Fatalf("outcome %v deleted the object", o)
		}
	}
	store.Settled(worker.Settlement{Message: msg, Outcome: worker.Deleted, Late: true})
	if s3c.count() != 1 {
		t.Fatal("a Deleted settlement confirmed late deleted the object another consumer may still need")
	}
	store.Settled(worker.Settlement{Message: msg, Outcome: worker.Deleted})
	if s3c.count() != 0 {
		t.Error("a Deleted settlement left the object")
	}
}

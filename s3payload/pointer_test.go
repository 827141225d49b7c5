package s3payload_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/sqsworker/sqsworker/s3payload"
)

// TestPointerBodyIsTheJavaClientsFormat checks that Go writes, byte for
// byte, the body the Java extended client writes for the same object.
func TestPointerBodyIsTheJavaClientsFormat(t *testing.T) {
	f := loadFixture(t, "java-default.json")
	p := s3payload.Pointer{Bucket: f.Object.Bucket, Key: f.Object.Key}
	if got := p.Body(); got != f.Message.Body {
		t.Errorf("Body() =\n%s\nthe Java client writes\n%s", got, f.Message.Body)
	}
	if got := (s3payload.Pointer{Bucket: "b", Key: `a "quoted" <key>`}).Body(); got != `["software.amazon.payloadoffloading.PayloadS3Pointer",{"s3BucketName":"b","s3Key":"a \"quoted\" <key>"}]` {
		t.Errorf("escaping: %s", got)
	}
}

func TestParsePointer(t *testing.T) {
	want := s3payload.Pointer{Bucket: "bkt", Key: "k/1"}
	for _, tc := range []struct {
		body string
		ok   bool
	}{
		{`["software.amazon.payloadoffloading.PayloadS3Pointer",{"s3BucketName":"bkt","s3Key":"k/1"}]`, true},
		{`["software.amazon.payloadoffloading.PayloadS3Pointer", {"s3BucketName": "bkt", "s3Key": "k/1"}]`, true},
		{`["com.amazon.sqs.javamessaging.MessageS3Pointer",{"s3Key":"k/1","s3BucketName":"bkt"}]`, true},
		{"\n[ \"software.amazon.payloadoffloading.PayloadS3Pointer\" ,\n{\"s3BucketName\":\"bkt\",\"s3Key\":\"k/1\",\"extra\":1} ]\n", true},
		{`["some.other.Class",{"s3BucketName":"bkt","s3Key":"k/1"}]`, false},
		{`["software.amazon.payloadoffloading.PayloadS3Pointer",{"s3BucketName":"bkt"}]`, false},
		{`["software.amazon.payloadoffloading.PayloadS3Pointer",{"s3BucketName":"","s3Key":"k"}]`, false},
		{`["software.amazon.payloadoffloading.PayloadS3Pointer",{"s3BucketName":"bkt","s3Key":""}]`, false},
		{`["software.amazon.payloadoffloading.PayloadS3Pointer",{"s3BucketName":"b/x","s3Key":"k"}]`, false},
		{`["software.amazon.payloadoffloading.PayloadS3Pointer",{"s3BucketName":"bkt","s3Key":"k/1"},3]`, false},
		{`{"s3BucketName":"bkt","s3Key":"k/1"}`, false},
		{`["software.amazon.payloadoffloading.PayloadS3Pointer",{"s3BucketName":"bkt","s3Key":"` + strings.Repeat("k", 1025) + `"}]`, false},
		{`hello`, false},
		{``, false},
	} {
		p, err := s3payload.ParsePointer(tc.body)
		if tc.ok && (err != nil || p != want) {
			t.Errorf("ParsePointer(%q) = %v, %v; want %v", tc.body, p, err, want)
		}
		if !tc.ok && (err == nil || !errors.Is(err, s3payload.ErrNotPointer)) {
			t.Errorf("ParsePointer(%q) = %v, %v; want ErrNotPointer", tc.body, p, err)
		}
	}
}

func TestLookup(t *testing.T) {
	body := s3payload.Pointer{Bucket: "b", Key: "k"}.Body()
	num := func(v string) types.MessageAttributeValue {
		return types.MessageAttributeValue{DataType: aws.String("Number"), StringValue: aws.String(v)}
	}
	for _, tc := range []struct {
		name          string
		body          string
		attrs         map[string]types.MessageAttributeValue
		offloaded, ok bool
	}{
		{"current name", body, map[string]types.MessageAttributeValue{"ExtendedPayloadSize": num("5")}, true, true},
		{"legacy name", body, map[string]types.MessageAttributeValue{"SQSLargePayloadSize": num("5")}, true, true},
		{"no attribute: an ordinary message, even with a pointer-like body", body, nil, false, true},
		{"attribute, body not a pointer", "hello", map[string]types.MessageAttributeValue{"ExtendedPayloadSize": num("5")}, true, false},
		{"attribute not a size", body, map[string]types.MessageAttributeValue{"ExtendedPayloadSize": num("five")}, true, false},
	} {
		p, size, off, err := s3payload.Lookup(tc.body, tc.attrs)
		if off != tc.offloaded || (err == nil) != tc.ok {
			t.Errorf("%s: offloaded %v, err %v; want %v, error %v", tc.name, off, err, tc.offloaded, !tc.ok)
		}
		if tc.offloaded && tc.ok && (p.Key != "k" || size != 5) {
			t.Errorf("%s: %v, %d", tc.name, p, size)
		}
	}
}

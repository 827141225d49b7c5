package s3payload_test

import (
	"testing"

	"github.com/sqsworker/sqsworker/s3payload"
)

// FuzzParsePointer feeds arbitrary bodies to the pointer parser: it must
// never panic, and a pointer it accepts must survive Body and ParsePointer
// unchanged (a Go producer and the extended clients then agree on it).
func FuzzParsePointer(f *testing.F) {
	for _, s := range []string{
		`["software.amazon.payloadoffloading.PayloadS3Pointer",{"s3BucketName":"b","s3Key":"k"}]`,
		`["com.amazon.sqs.javamessaging.MessageS3Pointer", {"s3BucketName": "b", "s3Key": "a/b c\u00e9"}]`,
		`["software.amazon.payloadoffloading.PayloadS3Pointer",{"s3BucketName":"b","s3Key":"k","x":[1,{}]}]`,
		`[]`, `[1,2]`, `null`, `{"s3Key":"k"}`, "\x00",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, body string) {
		p, err := s3payload.ParsePointer(body)
		if err != nil {
			return
		}
		again, err := s3payload.ParsePointer(p.Body())
		if err != nil || again != p {
			t.Fatalf("ParsePointer(%q) = %+v, but its Body %q parses as %+v, %v", body, p, p.Body(), again, err)
		}
	})
}

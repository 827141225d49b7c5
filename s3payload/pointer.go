package s3payload

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
)

// The wire format of AWS's extended clients.
const (
	// attrSize is the message attribute (a Number: the original body's
	// size in bytes) that marks a message whose body is a pointer, as the
	// Java extended client 2.x (with its legacy name disabled) and the
	// Python extended client (by default) write it.
	attrSize = "ExtendedPayloadSize"
	// attrLegacySize is the same attribute under its first name, which the
	// Java extended client writes by default and every version of both
	// clients reads.
	attrLegacySize = "SQSLargePayloadSize"
	// pointerClass is the Java class name that leads the pointer body.
	pointerClass = "software.amazon.payloadoffloading.PayloadS3Pointer"
	// legacyPointerClass is the class name of the Java client 1.0's
	// pointers, which the Python client writes in its legacy mode.
	legacyPointerClass = "com.amazon.sqs.javamessaging.MessageS3Pointer"
)

// errNotPointer is wrapped by the errors of parsePointer and Lookup for a
// body that is not a payload pointer.
var errNotPointer = errors.New("not an S3 payload pointer")

// Pointer locates an offloaded body in S3.
type Pointer struct {
	Bucket string
	Key    string
}

// String returns "s3://bucket/key".
func (p Pointer) String() string { return "s3://" + p.Bucket + "/" + p.Key }

// body returns the message body that carries p, exactly as the Java
// extended client writes it (Jackson's compact JSON with the class name):
//
//	["software.amazon.payloadoffloading.PayloadS3Pointer",{"s3BucketName":"b","s3Key":"k"}]
func (p Pointer) body() string {
	var b bytes.Buffer
	b.WriteString(`["` + pointerClass + `",{"s3BucketName":`)
	writeJSONString(&b, p.Bucket)
	b.WriteString(`,"s3Key":`)
	writeJSONString(&b, p.Key)
	b.WriteString(`}]`)
	return b.String()
}

func writeJSONString(b *bytes.Buffer, s string) {
	enc := json.NewEncoder(b)
	enc.SetEscapeHTML(false) // as Jackson: "<" stays "<"
	_ = enc.Encode(s)        // a string always encodes
	b.Truncate(b.Len() - 1)  // Encode's newline
}

// maxPointerLen bounds what parsePointer reads: the class name, a bucket
// name and a 1,024-byte key, escaped, fit easily.
const maxPointerLen = 16 << 10

// parsePointer reads a pointer body in either client's form: a JSON array
// of pointerClass (or legacyPointerClass) and an object with s3BucketName and
// s3Key (other fields are ignored, as the clients ignore them), with any
// whitespace.
func parsePointer(body string) (Pointer, error) {
	if len(body) > maxPointerLen {
		return Pointer{}, fmt.Errorf("%w: the body has %d bytes", errNotPointer, len(body))
	}
	var arr []json.RawMessage
	if err := json.Unmarshal([]byte(body), &arr); err != nil || len(arr) != 2 {
		return Pointer{}, fmt.Errorf("%w: want a JSON array [class, {\"s3BucketName\", \"s3Key\"}]", errNotPointer)
	}
	var class string
	if err := json.Unmarshal(arr[0], &class); err != nil || (class != pointerClass && class != legacyPointerClass) {
		return Pointer{}, fmt.Errorf("%w: the class is %s, want %q or %q", errNotPointer, arr[0], pointerClass, legacyPointerClass)
	}
	var obj struct {
		Bucket *string `json:"s3BucketName"`
		Key    *string `json:"s3Key"`
	}
	if err := json.Unmarshal(arr[1], &obj); err != nil {
		return Pointer{}, fmt.Errorf("%w: %v", errNotPointer, err)
	}
	if obj.Bucket == nil || obj.Key == nil {
		return Pointer{}, fmt.Errorf("%w: s3BucketName or s3Key is missing", errNotPointer)
	}
	p := Pointer{Bucket: *obj.Bucket, Key: *obj.Key}
	if err := p.validate(); err != nil {
		return Pointer{}, fmt.Errorf("%w: %v", errNotPointer, err)
	}
	return p, nil
}

// validate applies S3's naming limits.
func (p Pointer) validate() error {
	switch {
	case p.Bucket == "" || len(p.Bucket) > 255 || strings.ContainsAny(p.Bucket, "/ \t\r\n"):
		return fmt.Errorf("bucket name %q is not a valid S3 bucket name", p.Bucket)
	case p.Key == "" || len(p.Key) > 1024 || !utf8.ValidString(p.Key):
		return fmt.Errorf("key of %d bytes is not a valid S3 key (1 to 1,024 bytes of UTF-8)", len(p.Key))
	}
	return nil
}

// Lookup reports whether a received message's body was offloaded: it
// carries the size attribute under either name (attrSize or
// attrLegacySize). It then parses the pointer from the body and returns it
// with the size the attribute gives; an error (wrapping errNotPointer)
// means the attribute is there but the body or the size is unreadable.
func Lookup(body string, attrs map[string]types.MessageAttributeValue) (p Pointer, size int64, offloaded bool, err error) {
	v, ok := attrs[attrSize]
	name := attrSize
	if !ok {
		v, ok = attrs[attrLegacySize]
		name = attrLegacySize
	}
	if !ok {
		return Pointer{}, 0, false, nil
	}
	size, perr := strconv.ParseInt(strings.TrimSpace(aws.ToString(v.StringValue)), 10, 64)
	if perr != nil || size < 0 {
		return Pointer{}, 0, true, fmt.Errorf("%w: attribute %s is %q, want a size in bytes", errNotPointer, name, aws.ToString(v.StringValue))
	}
	p, err = parsePointer(body)
	if err != nil {
		return Pointer{}, 0, true, fmt.Errorf("the message carries attribute %s but its body is not a pointer: %w", name, err)
	}
	return p, size, true, nil
}

// isSizeAttribute reports whether name is one of the reserved size
// attributes.
func isSizeAttribute(name string) bool { return name == attrSize || name == attrLegacySize }

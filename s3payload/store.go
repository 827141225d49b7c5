package s3payload

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	s3types "github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/aws/smithy-go"
	smithyrand "github.com/aws/smithy-go/rand"

	"github.com/sqsworker/sqsworker/dlq"
	"github.com/sqsworker/sqsworker/internal/sqslimit"
	"github.com/sqsworker/sqsworker/producer"
	"github.com/sqsworker/sqsworker/retry"
	"github.com/sqsworker/sqsworker/worker"
)

// API is the S3 calls a Store makes, with the AWS SDK for Go v2's exact
// signatures. *s3.Client satisfies it.
type API interface {
	PutObject(ctx context.Context, params *s3.PutObjectInput, optFns ...func(*s3.Options)) (*s3.PutObjectOutput, error)
	GetObject(ctx context.Context, params *s3.GetObjectInput, optFns ...func(*s3.Options)) (*s3.GetObjectOutput, error)
	DeleteObject(ctx context.Context, params *s3.DeleteObjectInput, optFns ...func(*s3.Options)) (*s3.DeleteObjectOutput, error)
}

var _ API = (*s3.Client)(nil)

// Defaults and limits.
const (
	// defaultThreshold is Options.Threshold's zero value: SQS's message size
	// limit (1 MiB), so only messages SQS could not take are offloaded.
	defaultThreshold = sqslimit.MaxMessageSize
	// defaultMaxPayloadSize is Options.MaxPayloadSize's zero value (256 MiB).
	defaultMaxPayloadSize = 256 << 20
	// maxKeyPrefix leaves room for the UUID in S3's 1,024-byte keys.
	maxKeyPrefix = 1024 - 36
)

var keyPrefixRE = regexp.MustCompile(`^[a-zA-Z0-9./_-]*$`)

// Options configures a Store. Every field's zero value selects the
// documented default.
type Options struct {
	// Threshold is the message size (body and attributes, as SQS counts
	// them) above which Offload stores the body in S3. Zero value:
	// 1 MiB, SQS's limit, so only messages SQS could not take are offloaded. Set it to the queue's MaximumMessageSize
	// when that is lower (the Java and Python clients use 256 KiB).
	Threshold int
	// AlwaysOffload stores every body in S3, whatever its size (the
	// extended clients' alwaysThroughS3). Zero value: false.
	AlwaysOffload bool
	// KeyPrefix starts every object key Offload creates; the rest is a
	// random UUID, as the Java client names its objects (its s3KeyPrefix).
	// Letters, digits and . / _ - only. Zero value: no prefix.
	KeyPrefix string
	// SizeAttribute names the attribute Offload adds:
	// "SQSLargePayloadSize" (what the Java client writes by default and
	// every version of both extended clients reads) or
	// "ExtendedPayloadSize" (the Python client's default, read by Java
	// client 2.x and the Python client). Zero value: "SQSLargePayloadSize".
	SizeAttribute string
	// MaxPayloadSize is the largest object the Middleware reads into a
	// message body; a larger one is a permanent failure. Zero value:
	// 256 MiB.
	MaxPayloadSize int64
	// PutObject, when set, adjusts every PutObject request before it is
	// made: server-side encryption (ServerSideEncryption, SSEKMSKeyId), a
	// storage class, tags. Zero value: none.
	PutObject func(*s3.PutObjectInput)
	// Logger receives Settled's failures to delete an object. Zero value:
	// slog.Default().
	Logger *slog.Logger
}

// Store offloads large message bodies to an S3 bucket and brings them
// back, in the format of AWS's SQS extended clients. It implements
// producer.Offloader and provides a worker.Middleware. It is safe for
// concurrent use.
type Store struct {
	client API
	bucket string
	opts   Options
}

var (
	_ producer.Offloader = (*Store)(nil)
	_ dlq.Offloader      = (*Store)(nil)
)

// New returns a Store that puts bodies in bucket. Fetching and deleting
// follow each message's own pointer, whatever its bucket.
func New(client API, bucket string, optFns ...func(*Options)) (*Store, error) {
	if client == nil {
		return nil, errors.New("s3payload: client is nil; pass an *s3.Client")
	}
	if err := (Pointer{Bucket: bucket, Key: "k"}).validate(); err != nil {
		return nil, fmt.Errorf("s3payload: %v", err)
	}
	var o Options
	for _, fn := range optFns {
		fn(&o)
	}
	switch {
	case o.Threshold < 0 || o.MaxPayloadSize < 0:
		return nil, errors.New("s3payload: Options.Threshold and MaxPayloadSize must not be negative (0 selects the default)")
	case len(o.KeyPrefix) > maxKeyPrefix || !keyPrefixRE.MatchString(o.KeyPrefix):
		return nil, fmt.Errorf("s3payload: Options.KeyPrefix %q: use at most %d letters, digits and . / _ - (as the Java client allows)", o.KeyPrefix, maxKeyPrefix)
	case o.SizeAttribute != "" && !isSizeAttribute(o.SizeAttribute):
		return nil, fmt.Errorf("s3payload: Options.SizeAttribute is %q; use %s or %s, the names the extended clients read", o.SizeAttribute, attrLegacySize, attrSize)
	}
	if o.Threshold == 0 {
		o.Threshold = defaultThreshold
	}
	if o.MaxPayloadSize == 0 {
		o.MaxPayloadSize = defaultMaxPayloadSize
	}
	if o.SizeAttribute == "" {
		o.SizeAttribute = attrLegacySize
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	return &Store{client: client, bucket: bucket, opts: o}, nil
}

// Offload stores m's body in S3 when the message is larger than
// Options.Threshold (or always, with AlwaysOffload): the object is named
// KeyPrefix plus a random UUID, the body becomes the pointer (see the
// package doc's wire format) and the size attribute gives the original body's size in bytes. It
// refuses a message that already carries a size attribute (the consumer
// would take it for a pointer), and an offloaded message that has no
// attribute slot left for the size.
func (s *Store) Offload(ctx context.Context, m *producer.Message) (bool, error) {
	for name := range m.Attributes {
		if isSizeAttribute(name) {
			return false, fmt.Errorf("s3payload: message attribute %s is reserved for offloaded bodies; rename it", name)
		}
	}
	if !s.opts.AlwaysOffload && sqslimit.MessageSize(m.Body, m.Attributes) <= s.opts.Threshold {
		return false, nil
	}
	if len(m.Attributes) >= sqslimit.MaxMessageAttributes {
		return false, fmt.Errorf("s3payload: an offloaded message needs one attribute for its size, and this one has %d already (SQS allows %d)", len(m.Attributes), sqslimit.MaxMessageAttributes)
	}
	pointer, marker, err := s.OffloadBody(ctx, m.Body)
	if err != nil {
		return false, err
	}
	if m.Attributes == nil {
		m.Attributes = map[string]types.MessageAttributeValue{}
	}
	maps.Copy(m.Attributes, marker)
	m.Body = pointer
	return true, nil
}

// OffloadBody stores body in S3, whatever its size, and returns the
// pointer body and the size attribute (Options.SizeAttribute) an offloaded
// message carries. It is Offload's storing step, and what a dead-letter
// copy too large for its dead-letter queue goes through (Store implements
// dlq.Offloader: set it as worker.Options.DeadLetterOffloader or
// sqslambda.Options.DeadLetterOffloader). The object must outlive the
// message: the bucket's lifecycle rule expires it (see the package doc).
func (s *Store) OffloadBody(ctx context.Context, body string) (string, map[string]types.MessageAttributeValue, error) {
	id, err := smithyrand.NewUUID(rand.Reader).GetUUID() // random (version 4), as the Java client's keys
	if err != nil {
		return "", nil, fmt.Errorf("s3payload: naming the object: %w", err)
	}
	p := Pointer{Bucket: s.bucket, Key: s.opts.KeyPrefix + id}
	in := &s3.PutObjectInput{
		Bucket: aws.String(p.Bucket), Key: aws.String(p.Key),
		Body: strings.NewReader(body), ContentLength: aws.Int64(int64(len(body))),
	}
	if s.opts.PutObject != nil {
		s.opts.PutObject(in)
	}
	if _, err := s.client.PutObject(ctx, in); err != nil {
		return "", nil, fmt.Errorf("s3payload: storing the body in %s: %w", p, err)
	}
	return p.body(), map[string]types.MessageAttributeValue{s.opts.SizeAttribute: {
		DataType: aws.String("Number"), StringValue: aws.String(strconv.Itoa(len(body))),
	}}, nil
}

// Middleware returns a worker.Middleware that gives the handler the
// offloaded body of a message that carries a pointer (written by Offload or
// by either extended client): m.Body becomes the object's content and the
// size attribute is removed from m.MessageAttributes; m.Raw keeps the
// message as received, pointer and size attribute, as does the runtime,
// which settles, dead-letters and redrives the message from its own copy.
// Other messages pass unchanged.
//
// A pointer that does not parse, and an object that does not exist or is
// larger than MaxPayloadSize, are permanent failures (retry.Permanent: the
// message goes to the dead-letter queue with the reason); other S3 errors
// are ordinary failures, retried. The middleware never deletes the object:
// Settled does, once the message itself is deleted.
func (s *Store) Middleware() worker.Middleware {
	return func(next worker.Handler) worker.Handler {
		return worker.HandlerFunc(func(ctx context.Context, m *worker.Message) error {
			p, _, offloaded, err := Lookup(m.Body, m.MessageAttributes)
			if !offloaded {
				return next.Handle(ctx, m)
			}
			if err != nil {
				return retry.Permanent(fmt.Errorf("s3payload: message %s: %w", m.ID, err))
			}
			body, err := s.get(ctx, p)
			if err != nil {
				return fmt.Errorf("s3payload: message %s: %w", m.ID, err)
			}
			attrs := make(map[string]types.MessageAttributeValue, len(m.MessageAttributes))
			for k, v := range m.MessageAttributes {
				if !isSizeAttribute(k) {
					attrs[k] = v
				}
			}
			// m.Raw stays the message as received, pointer and size
			// attribute (its Body may point at m.Body: detach it first).
			pointerBody := m.Body
			m.Raw.Body = &pointerBody
			m.Raw.MessageAttributes = m.MessageAttributes
			m.Body, m.MessageAttributes = body, attrs
			return next.Handle(ctx, m)
		})
	}
}

// get reads the object p points to.
func (s *Store) get(ctx context.Context, p Pointer) (string, error) {
	out, err := s.client.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(p.Bucket), Key: aws.String(p.Key)})
	if err != nil {
		if missing(err) {
			return "", retry.Permanent(fmt.Errorf("the payload object %s does not exist (deleted after an earlier delivery succeeded, expired by a lifecycle rule, or never written): %w", p, err))
		}
		return "", fmt.Errorf("reading the payload object %s: %w", p, err)
	}
	defer out.Body.Close()
	if out.ContentLength != nil && *out.ContentLength > s.opts.MaxPayloadSize {
		return "", retry.Permanent(fmt.Errorf("the payload object %s has %d bytes, more than Options.MaxPayloadSize (%d)", p, *out.ContentLength, s.opts.MaxPayloadSize))
	}
	b, err := io.ReadAll(io.LimitReader(out.Body, s.opts.MaxPayloadSize+1))
	if err != nil {
		return "", fmt.Errorf("reading the payload object %s: %w", p, err)
	}
	if int64(len(b)) > s.opts.MaxPayloadSize {
		return "", retry.Permanent(fmt.Errorf("the payload object %s has more than Options.MaxPayloadSize (%d) bytes", p, s.opts.MaxPayloadSize))
	}
	return string(b), nil
}

// Delete deletes the S3 object of a message whose body was offloaded, and
// reports whether the message had one. msg is the message as received
// (worker.Message.Raw, or a settlement's Message.Raw): its body still the
// pointer. Call it only once SQS has confirmed the message's delete after
// its job succeeded — never before (a retry must still find the object),
// and not when the message was moved to the dead-letter queue or re-sent
// (the copy points to the same object); Settled does exactly that.
// Deleting an object that is already gone is not an error.
func (s *Store) Delete(ctx context.Context, msg types.Message) (bool, error) {
	p, _, offloaded, err := Lookup(aws.ToString(msg.Body), msg.MessageAttributes)
	if !offloaded || err != nil {
		return false, err
	}
	if _, err := s.client.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(p.Bucket), Key: aws.String(p.Key)}); err != nil && !missing(err) {
		return true, fmt.Errorf("s3payload: deleting the payload object %s of message %s: %w", p, aws.ToString(msg.MessageId), err)
	}
	return true, nil
}

// deleteTimeout bounds Settled's DeleteObject call.
const deleteTimeout = 30 * time.Second

// Settled deletes the payload object of a message whose job is done: a
// settlement with Outcome worker.Deleted, which the worker reports only
// once SQS has confirmed the message's delete. Every other outcome
// (retrying, dead-lettered, released, lost, abandoned, snoozed, delayed)
// keeps the object, since the message — or its re-sent copy, which points
// to the same object — will be read again. A Deleted settlement confirmed
// late (Settlement.Late: the message's visibility ran out first) keeps it
// too: another consumer may have received the message meanwhile and must
// still find its object, so the bucket's lifecycle rule removes that one.
// Use it as worker.Options.OnSettled, or call it from yours; a failed
// delete is logged (Options.Logger) and leaves the object to the lifecycle
// rule.
//
// Not on AWS Lambda: sqslambda reports a succeeded record as Deleted
// before the event source mapping deletes it, so a record whose delete
// then fails would come back without its object. There, leave objects to
// the lifecycle rule.
func (s *Store) Settled(st worker.Settlement) {
	if st.Outcome != worker.Deleted || st.Late || st.Message == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), deleteTimeout)
	defer cancel()
	if _, err := s.Delete(ctx, st.Message.Raw); err != nil {
		s.opts.Logger.Warn("s3payload: the payload object of a deleted message was not deleted; the bucket's lifecycle rule will expire it",
			"message_id", st.Message.ID, "error", err)
	}
}

// missing reports whether err says the object or its bucket does not exist.
func missing(err error) bool {
	var nsk *s3types.NoSuchKey
	var nsb *s3types.NoSuchBucket
	var nf *s3types.NotFound
	if errors.As(err, &nsk) || errors.As(err, &nsb) || errors.As(err, &nf) {
		return true
	}
	var api smithy.APIError
	return errors.As(err, &api) && (api.ErrorCode() == "NoSuchKey" || api.ErrorCode() == "NoSuchBucket")
}

package fanout

import (
	"context"
	"maps"

	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/sqsworker/sqsworker/retry"
	"github.com/sqsworker/sqsworker/worker"
)

// UnwrapOptions configures Unwrap. Every field's zero value is usable.
type UnwrapOptions struct {
	// AllowRaw passes messages that are not SNS envelopes at all (see
	// IsEnvelope) to the handler unchanged, with Message.SNS nil: for a queue
	// that also gets raw deliveries or direct sends. Zero value: such a
	// message is a permanent failure (to the dead-letter queue, with the
	// reason), because on a queue whose subscriptions deliver envelopes it
	// means the setup is not what the handler expects. A broken envelope is
	// a permanent failure either way.
	AllowRaw bool
}

// Unwrap returns middleware that hands the handler the message SNS
// published rather than SNS's JSON envelope around it, for queues subscribed
// to a topic without raw message delivery: Message.Body becomes the
// published message, the published message attributes join
// Message.MessageAttributes (Binary ones decoded), and Message.SNS carries
// the topic ARN, the SNS message ID, the subject and the timestamp.
//
// A message that is not a well-formed envelope is a permanent failure
// (retry.Permanent with an *EnvelopeError saying why), so it goes to the
// dead-letter queue with that reason, as received, never dropped.
//
// Unwrapping is explicit — the worker and the Lambda adapter never guess
// from a body's looks — because a published message may itself be JSON with
// a "Type" member; `sqsworker doctor --delivery envelope` checks that the
// queue's subscriptions match. With raw message delivery there is no
// envelope, no SNS metadata, and no need for Unwrap.
//
// Unwrap changes only Body, MessageAttributes (a new map) and SNS; the
// message's Raw form and receipt handle stay as received, so a dead-letter
// move keeps the envelope.
func Unwrap(optFns ...func(*UnwrapOptions)) worker.Middleware {
	var o UnwrapOptions
	for _, fn := range optFns {
		fn(&o)
	}
	return func(next worker.Handler) worker.Handler {
		return worker.HandlerFunc(func(ctx context.Context, m *worker.Message) error {
			if o.AllowRaw && !IsEnvelope(m.Body) {
				return next.Handle(ctx, m)
			}
			e, err := ParseEnvelope(m.Body)
			if err != nil {
				if !IsEnvelope(m.Body) {
					err = &EnvelopeError{Reason: "the message is not an SNS envelope (no JSON object with Type and TopicArn); if its subscription uses raw message delivery, drop fanout.Unwrap for this queue or set UnwrapOptions.AllowRaw"}
				}
				return retry.Permanent(err)
			}
			attrs := maps.Clone(m.MessageAttributes)
			if attrs == nil && len(e.MessageAttributes) > 0 {
				attrs = map[string]types.MessageAttributeValue{}
			}
			maps.Copy(attrs, e.SQSMessageAttributes())
			m.Body, m.MessageAttributes = e.Message, attrs
			m.SNS = &worker.SNSMetadata{
				TopicARN: e.TopicARN, MessageID: e.MessageID, Subject: e.Subject, Timestamp: e.Time(), Type: e.Type,
				SequenceNumber: e.SequenceNumber, UnsubscribeURL: e.UnsubscribeURL,
				SignatureVersion: e.SignatureVersion, Signature: e.Signature, SigningCertURL: e.SigningCertURL,
			}
			return next.Handle(ctx, m)
		})
	}
}

package sqsotel

import (
	"context"
	"fmt"
	"maps"
	"slices"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"go.opentelemetry.io/otel/codes"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/sqsworker/sqsworker/internal/sqserr"
	"github.com/sqsworker/sqsworker/producer"
	"github.com/sqsworker/sqsworker/worker"
)

// Client returns c with a span around each receive and each send, as OTel's
// messaging conventions describe both sides:
//
//   - ReceiveMessage: a CLIENT span "receive QUEUE" (messaging.operation.type
//     receive, .name ReceiveMessage), with messaging.batch.message_count
//     (or messaging.message.id for one message) and a link to each
//     received message's producer context. A worker's empty long polls make
//     spans too, with a count of 0.
//   - SendMessageBatch (the producer's sends and the worker's dead-letter
//     copies): a PRODUCER span "send QUEUE" (messaging.operation.type send,
//     .name SendMessageBatch), with messaging.batch.message_count (or
//     messaging.message.id for one message), a link to the context each
//     message already carries (BeforeSend's, or the original message's in a
//     dead-letter copy), and, for a message that carries none, the span's own
//     context written as the AWSTraceHeader system attribute — which counts
//     neither against SQS's 10 message attributes nor against its size
//     limit, so the message SQS gets is never refused for it. The caller's
//     input is not modified. Entries SQS refuses set the span's status to
//     Error.
//
// Every span has messaging.system, messaging.destination.name,
// aws.sqs.queue.url, server.address and server.port (from the queue URL);
// a failed call sets error.type to SQS's error code. Pass the result to
// worker.New and producer.New in place of c; the other calls go to c
// untouched.
func (in *Instrumentation) Client(c worker.API) worker.API {
	return &tracedClient{API: c, in: in}
}

var _ producer.API = (*tracedClient)(nil)

// tracedClient is Client's result.
type tracedClient struct {
	worker.API
	in *Instrumentation
}

// ReceiveMessage is c's, inside a receive span.
func (c *tracedClient) ReceiveMessage(ctx context.Context, params *sqs.ReceiveMessageInput, optFns ...func(*sqs.Options)) (*sqs.ReceiveMessageOutput, error) {
	q := c.in.queueOf(aws.ToString(params.QueueUrl))
	ctx, span := c.in.tracer.Start(ctx, q.receiveName, q.receiveOpts...)
	out, err := c.API.ReceiveMessage(ctx, params, optFns...)
	if span.IsRecording() {
		if out != nil {
			switch n := len(out.Messages); n {
			case 1:
				span.SetAttributes(semconv.MessagingMessageID(aws.ToString(out.Messages[0].MessageId)))
			default:
				span.SetAttributes(semconv.MessagingBatchMessageCount(n))
			}
			for _, m := range out.Messages {
				for _, sc := range producerContexts(c.in.opts.Propagator, m.MessageAttributes, m.Attributes) {
					span.AddLink(trace.Link{SpanContext: sc})
				}
			}
		}
		failed(span, err)
	}
	span.End()
	return out, err
}

// SendMessageBatch is c's, inside a send span whose context the messages
// without one carry.
func (c *tracedClient) SendMessageBatch(ctx context.Context, params *sqs.SendMessageBatchInput, optFns ...func(*sqs.Options)) (*sqs.SendMessageBatchOutput, error) {
	q := c.in.queueOf(aws.ToString(params.QueueUrl))
	ctx, span := c.in.tracer.Start(ctx, q.sendName, q.sendOpts...)
	sent := *params
	sent.Entries = slices.Clone(params.Entries)
	for i := range sent.Entries {
		e := &sent.Entries[i]
		sys := make(map[string]string, 1)
		if v, ok := e.MessageSystemAttributes[awsTraceHeader]; ok {
			sys[awsTraceHeader] = aws.ToString(v.StringValue)
		}
		if carried := producerContexts(c.in.opts.Propagator, e.MessageAttributes, sys); len(carried) > 0 {
			for _, sc := range carried {
				span.AddLink(trace.Link{SpanContext: sc})
			}
			continue
		}
		if trace.SpanContextFromContext(ctx).IsValid() {
			e.MessageSystemAttributes = withXRay(ctx, maps.Clone(e.MessageSystemAttributes))
		}
	}
	out, err := c.API.SendMessageBatch(ctx, &sent, optFns...)
	if span.IsRecording() {
		if len(sent.Entries) == 1 && out != nil && len(out.Successful) == 1 {
			span.SetAttributes(semconv.MessagingMessageID(aws.ToString(out.Successful[0].MessageId)))
		} else if len(sent.Entries) != 1 {
			span.SetAttributes(semconv.MessagingBatchMessageCount(len(sent.Entries)))
		}
		if err == nil && out != nil && len(out.Failed) > 0 {
			f := out.Failed[0]
			span.SetAttributes(semconv.ErrorTypeKey.String(aws.ToString(f.Code)))
			span.SetStatus(codes.Error, fmt.Sprintf("%d of %d messages refused: %s", len(out.Failed), len(sent.Entries), aws.ToString(f.Message)))
		}
		failed(span, err)
	}
	span.End()
	return out, err
}

// failed records a failed call on its span: error.type is SQS's error
// code (without the AWS.SimpleQueueService. prefix), or _OTHER.
func failed(span trace.Span, err error) {
	if err == nil {
		return
	}
	kind := sqserr.Code(err)
	if kind == "" {
		kind = semconv.ErrorTypeOther.Value.AsString()
	}
	span.SetAttributes(semconv.ErrorTypeKey.String(kind))
	span.SetStatus(codes.Error, err.Error())
	span.RecordError(err)
}

// Package producer is the sending side of sqsworker: it puts jobs on an SQS
// queue, or publishes them to an SNS topic, in batches, with per-message
// results, so that none is silently dropped.
//
//	p, err := producer.New(sqs.NewFromConfig(cfg), "orders") // a name, URL or ARN (see package queueref)
//	res, err := p.SendBatch(ctx, msgs) // any number: 10 per call, retried, one Result each
//
//	t, err := producer.NewTopic(sns.NewFromConfig(cfg), topicARN) // the same Producer, for a topic
//
// # Sending
//
// SendBatch sends a slice of any length at once: SendMessageBatch calls of up
// to 10 entries and 1 MiB in all (SQS's limits per call; PublishBatch calls
// of up to 10 entries and 256 KiB for a topic), up to Options.Concurrency
// calls in parallel. Send and Enqueue go through a
// background batcher instead, which gathers the messages of every caller
// into full batches: a batch leaves when it holds 10 messages (or 1 MiB), or
// when its first message has waited Options.Linger (20 ms). Enqueue returns
// at once with a Pending; Send waits for the result. Close flushes the
// batcher within its context's deadline: Enqueue calls waiting for room
// then return ErrClosed, and every accepted message not sent by the
// deadline fails in its Result. 10,000 messages enqueued in a burst take 1,000 calls: 0.1 requests
// per message.
//
// # Failures
//
// Each message gets a Result: its MessageID, or the error that kept it out
// of the queue. An entry SQS fails on its side (SenderFault false, or
// throttling), and a call that fails as a whole with a retryable error
// (throttling, a server error, the network, the call's timeout), is sent
// again after an exponential backoff, up to Options.MaxAttempts calls per
// message; only the failed entries are re-sent. An entry SQS refuses
// (SenderFault true: an invalid attribute, say) fails at once; its error is
// SQS's own (errors.As finds a smithy.APIError with SQS's code). Messages that cannot be sent as they are (an empty body, a
// FIFO message without a group, more than 10 attributes, too large) fail
// with ErrInvalid before any call. SendBatch returns a *BatchError when any
// message failed; Close returns one for the messages given to Send and
// Enqueue.
//
// A call whose response is lost may have enqueued its messages: the retry
// then enqueues them again. Consumers must be idempotent anyway (SQS
// delivers at least once); on a FIFO queue, give each message a
// DeduplicationID and SQS drops the second copy for five minutes.
//
// Messages given to Enqueue (or SendBatch) live in the process until SQS
// took them: a process that dies (SIGKILL, an OOM kill) loses those not yet
// sent, and its callers never see the Results of those sent meanwhile.
// Treat a message without a Result as unknown — record what must be sent
// (an outbox) if a crash must not lose it. RELIABILITY.md has the chaos
// suite's figures: every message reported sent was in the queue.
//
// # FIFO queues
//
// A queue whose name ends in ".fifo" is a FIFO queue: every message needs a
// GroupID, takes no Delay (but see Options.Schedule under Delays), and
// batches go out one at a time, in order. When
// an entry of a batch fails and is retried, the entries after it in that
// batch are already in the queue: order within a group holds as long as no
// entry needs a retry.
//
// # Delays
//
// Message.Delay up to 15 minutes is SQS's own DelaySeconds. Longer delays
// (a year and more) record the due time in the "sqsworker.due" message
// attribute (an RFC 3339 UTC time; it takes one of the 10 attribute slots)
// and send the message with the native delay that brings it to the
// consumer 15 minutes before it is due, at the latest. The consumer — a
// worker or sqslambda handler of this module — keeps such a message waiting
// without running the handler or counting an attempt, hiding it (up to 12 h
// at a time) or re-sending it as a fresh copy so that SQS never
// dead-letters it for its receive count nor deletes it for its age, and
// runs it on time as attempt 1. Waiting costs about 4.4 to 6 requests per
// job and day (more with a low maxReceiveCount or a short retention: 288 on
// a queue whose maxReceiveCount is 2 or less). Other consumers would see
// the message after at most 15 minutes: send long delays only to queues
// that sqsworker consumes. Standard queues only.
//
// Options.Schedule sends the messages due past a horizon
// (Options.ScheduleAfter, 15 minutes by default) through a one-time
// schedule instead: package schedules' Jobs.At creates an EventBridge
// Scheduler schedule that sends the job at its due time and is deleted
// after it fires. Such a job holds nothing in flight while it waits (SQS
// allows about 120,000 in-flight messages per queue), costs one
// CreateSchedule and one delivery however long it waits, works on FIFO
// queues, and can be cancelled or moved by its ID (the Result's
// MessageID) until a minute before it is due. The in-queue way is still
// better for short delays (up to 15 minutes SQS delays the message itself,
// to the second; Scheduler fires within the due minute and charges per
// schedule), for jobs that must be sent in one call with others (each
// schedule is one CreateSchedule), and where no Scheduler role and group
// are set up. On a consumer, put schedules.Unwrap first in the chain: it
// restores the body and attributes of a scheduled job.
//
// # Typed jobs
//
// JSON[T](p) returns a sender of T values encoded as JSON bodies; on the
// consuming side worker.JSON[T] decodes them strictly:
//
//	orders := producer.JSON[Order](p)
//	res, err := orders.Send(ctx, Order{ID: "A-1"}, producer.WithDelay(48*time.Hour))
//
// # Hooks, tracing and large bodies
//
// Options.BeforeSend hooks see every message, with the caller's context,
// before it is checked: observability code attaches trace context there,
// either as the AWSTraceHeader system attribute (Message.TraceHeader, which
// does not count toward SQS's 10 message attributes) or as a message
// attribute through Message.SetAttribute, which adds it only when a slot is
// free (counting the slots the producer still needs), and removes it again
// when the message would be too large with it (Options.MaxMessageSize,
// after the Offloader); the message is then sent without it: trace context
// is dropped before a message is.
//
// Options.Offloader stores bodies over its threshold elsewhere and sends a
// pointer instead; package s3payload does it in S3, in the format of AWS's
// extended clients for Java and Python.
//
// # Topics
//
// NewTopic returns a Producer for an SNS topic: the same type, the same
// Message, Options, Result and Stats, the same batcher and retry rule, so
// what the producer does for a queue it does for a topic — Enqueue, typed
// jobs, BeforeSend hooks, the Offloader. There is one sender for queues and
// topics, not two that mirror each other: package fanout sets up the
// chain behind the topic and checks it, and leaves sending to this package.
// Its calls are PublishBatch calls of up to 10 entries and 256 KiB in all
// (SNS's limits; Options.MaxMessageSize defaults to 256 KiB), their answers
// classified by the same table of error codes as SQS's (SNS's throttling
// and internal errors are retried, its sender faults are not). On a topic:
//
//   - GroupID is the MessageGroupId: a FIFO topic's message group
//     (required; batches go out one at a time, in order), or a standard
//     topic's tenant, which SNS passes on to the subscribed standard queues
//     (SQS fair queues). A group over 128 characters or with other than
//     ASCII letters, digits and punctuation, and a DeduplicationID on a
//     standard topic, fail with ErrInvalid before any call.
//   - Attributes are SNS's message attributes (what filter policies match);
//     Subject is the envelope's Subject (a queue refuses a Subject).
//   - Delay is refused: SNS has no per-message delay.
//   - TraceHeader is left out (a PublishBatch entry has no system
//     attributes); the attributes BeforeSend adds with SetAttribute travel.
//   - An Offloader's pointer reaches every subscribed queue: with
//     s3payload, set its Options.Threshold to at most 256 KiB, consume an
//     enveloped subscription with worker.Chain(h, fanout.Unwrap(),
//     store.Middleware()), and do not delete objects on settlement
//     (s3payload's Store.Settled) when several queues share the message;
//     let the bucket's lifecycle rule expire them.
//
// # IAM
//
// sqs:SendMessage on the queue (it authorises SendMessageBatch), and
// kms:GenerateDataKey on its key when the queue is encrypted with a
// customer managed KMS key. For a topic: sns:Publish (it authorises
// PublishBatch), and kms:GenerateDataKey and kms:Decrypt on its key when
// the topic is encrypted with a customer managed KMS key.
package producer

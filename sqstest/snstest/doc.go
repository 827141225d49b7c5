// Package snstest is an in-memory Amazon SNS for tests, delivering to the
// queues of an sqstest.Fake (or any SQS client): topics (standard and
// FIFO), SQS subscriptions with raw or enveloped delivery, filter policies
// on message attributes and on the message body, and subscription
// dead-letter queues.
//
// Publish and PublishBatch (up to 10 entries, 256 KiB in all, answered per
// entry) deliver at once, before they return, to every subscription whose
// filter policy accepts the message, with its MessageGroupId: a FIFO
// topic's group, or on a standard topic the tenant of an SQS fair queue,
// passed to the standard queue as SNS does. A delivery fails with a client error,
// as it does on AWS, when the subscribed queue does not exist, its queue
// policy does not let the topic's SNS principal send (the policy language
// is read the way fanout.Setup writes and fanout.Lint checks it), it is
// encrypted with the AWS managed key, or SQS denies or refuses the send; the
// message then goes, unchanged, to the subscription's RedrivePolicy
// dead-letter queue (which needs the same permission), or is discarded and
// counted in Stats.Lost. A delivery that fails with a server error or
// throttling (sqstest's injected faults, say) is retried instead, on SNS's
// delivery policy for SQS endpoints — 3 retries at once, then on timers
// (virtual time in a synctest bubble) for 23 days, or
// Options.DeliveryRetries — and dead-lettered only when the retries run
// out. Deliveries do not depend on the publisher's context.
//
// The SNS conformance suite in harness/conformance runs against this fake
// and against the emulator (fauxqs), so the fake keeps to the behaviour of
// real SNS that sqsworker relies on; the emulator's differences are
// declared there as quirks.
//
// A subscription of a queue in another account than the fake's
// (Options.AccountID) is pending until the test calls Fake.Confirm, as SNS
// keeps it until the queue's owner confirms: SNS's listings show
// "PendingConfirmation" instead of its ARN, and it gets no deliveries.
//
// Not modelled: SNS's jitter on retry delays, the order of a FIFO topic's
// messages when one waits for a retry, other protocols than sqs, the confirmation message and ConfirmSubscription
// (Fake.Confirm stands for them), topic policies, data protection, and
// message archiving.
package snstest

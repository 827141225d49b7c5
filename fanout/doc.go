// Package fanout is sqsworker's SNS side: the topic → subscription → queue
// chain of SNS fan-out, with a dead-letter queue at every level — on the
// subscription for what SNS cannot deliver (a deleted queue, a queue policy
// that refuses SNS, a KMS key SNS cannot use), and on the queue for what
// the consumer fails (package dlq).
//
//   - [Setup] creates what is missing of the chain — topic (FIFO when its
//     name ends in ".fifo", then FIFO queues throughout), queue and its
//     dead-letter queue (dlq.Setup), the subscription, the subscription's
//     dead-letter queue as its RedrivePolicy, and the queue policies that
//     let the topic send to both queues — and changes only what it is asked
//     to, reporting each dlq.Change. A subscription pending confirmation
//     (of a queue in another account) is reported, not subscribed again
//     ([ErrSubscriptionPending]).
//   - [Lint] checks the whole chain and returns dlq.Findings with stable
//     codes that say what to do.
//   - [Unwrap] is worker middleware that hands the handler the published
//     message, its attributes and SNS's metadata (worker.Message.SNS)
//     instead of SNS's JSON envelope. It serves the worker and the Lambda
//     adapter alike, since both run a worker.Handler.
//   - Publishing is package producer's: producer.NewTopic returns the
//     same Producer that sends to queues — one sender over one batch layer,
//     so a topic gets batching (PublishBatch calls of up to 10 messages and
//     256 KiB), the retry rule, per-message results, Enqueue, typed jobs
//     (producer.JSON), BeforeSend hooks (trace context) and the Offloader
//     (package s3payload) alike. A message's GroupID is its MessageGroupId:
//     a FIFO topic's message group, or a standard topic's tenant, which SNS
//     passes on to the subscribed standard queues (SQS fair queues; the
//     consumer reads it as worker.Message.GroupID, and fleet.Cap with
//     fleet.ByGroup caps each tenant's running jobs).
//   - [Redrive] moves a subscription dead-letter queue's messages to the
//     subscribed queue with dlq.Redrive's safety (dry run, filter, rate,
//     send-then-delete); [ServedBy] and [FindSubscription] find the
//     subscription of a dead-letter queue or of a queue.
//
// # Unwrapping is explicit
//
// Without raw message delivery SNS wraps each message in a JSON envelope
// (Type, MessageId, TopicArn, Subject, Message, Timestamp, signature
// fields, MessageAttributes). The worker does not guess from a body whether
// it is an envelope — a published message may itself be JSON with a "Type"
// — so a consumer behind an enveloped subscription adds Unwrap:
//
//	h := worker.Chain(handler, fanout.Unwrap())
//
// A message that is not a well-formed envelope is then a permanent failure
// (to the dead-letter queue with the reason, as received). With raw message
// delivery the queue gets the message and its attributes directly, with no
// SNS metadata, and needs no Unwrap. `sqsworker doctor --delivery
// envelope|raw` reports a subscription that delivers what the consumer does
// not expect (raw-delivery-mismatch). Unwrap does not verify SNS's
// signature: the queue policy Setup writes, which lets only the topic send,
// is what keeps envelopes from being forged into the queue. A statement
// that lets everyone send unconditionally defeats it: Lint reports it
// (queue-policy-open), and Setup adds the topic's own statement beside it
// and reports it in SetupResult.Findings, but leaves removing it to the
// queue's owner, since other senders may rely on it.
//
// # Subscription dead-letter queues
//
// SNS retries deliveries to SQS that fail on the server side for a long
// time (AWS documents 100,015 attempts over 23 days) and does not retry
// client errors — a deleted queue, a queue policy that refuses SNS, a KMS
// key it may not use. Either way, a message it gives up on is discarded
// unless the subscription has a RedrivePolicy naming a dead-letter queue,
// which must be in the subscription's account and region, of the topic's
// type (FIFO for a FIFO topic), and must itself let the topic send. The
// message SNS puts there is the one the queue would have got (the envelope,
// or the raw message and its attributes). SQS's message move tasks do not
// take such a dead-letter queue; Redrive moves its messages to the
// subscribed queue, not to the topic (which would deliver them again to
// every other subscriber).
//
// # IAM
//
// Setup: dlq.Setup's SQS actions (and sqs:SetQueueAttributes for the
// policies), sns:CreateTopic, sns:GetTopicAttributes, sns:Subscribe,
// sns:ListSubscriptionsByTopic, sns:GetSubscriptionAttributes,
// sns:SetSubscriptionAttributes. Lint, Subscriptions, ServedBy:
// sns:ListSubscriptions, sns:GetSubscriptionAttributes, and
// sqs:GetQueueAttributes, sqs:GetQueueUrl. Redrive: the manual move's
// (sqs:ReceiveMessage, sqs:ChangeMessageVisibility, sqs:DeleteMessage on the
// dead-letter queue, sqs:SendMessage on the queue). Unwrap: none.
// Publishing (producer.NewTopic): sns:Publish on the topic. Every function
// takes [API] for SNS (*sns.Client and snstest's Fake satisfy it; a
// function calls only what its IAM list names) and the narrowest of dlq's
// client interfaces for SQS.
package fanout

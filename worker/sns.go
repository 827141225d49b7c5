package worker

import "github.com/sqsworker/sqsworker/internal/settle"

// SNSMetadata is what Amazon SNS said about a message it delivered to the
// queue inside its JSON envelope (a subscription without raw message
// delivery). Middleware that unwraps the envelope, such as fanout.Unwrap,
// sets Message.SNS; it is nil for messages that did not come through SNS, or
// came with raw message delivery, which carries no envelope. Its fields:
//
//   - TopicARN: the topic the message was published to.
//   - MessageID: the SNS message ID, the same for every subscription the
//     publish fanned out to (unlike Message.ID, the SQS message ID).
//   - Subject: the publish's Subject, or "".
//   - Timestamp: when SNS accepted the publish.
//   - Type: the envelope's Type, "Notification" for a published message.
//   - SequenceNumber: the SNS sequence number of a message from a FIFO
//     topic, or "".
//   - UnsubscribeURL: the URL that removes the subscription that delivered
//     the message.
//   - SignatureVersion, Signature, SigningCertURL: SNS's signature of the
//     envelope, for handlers that verify it.
//
// (It is an alias of an internal type because the runtime's own copy of a
// message mirrors Message field for field.)
type SNSMetadata = settle.SNSMetadata

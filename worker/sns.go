package worker

import "time"

// SNSMetadata is what Amazon SNS said about a message it delivered to the
// queue inside its JSON envelope (a subscription without raw message
// delivery). Middleware that unwraps the envelope, such as fanout.Unwrap,
// sets Message.SNS; it is nil for messages that did not come through SNS, or
// came with raw message delivery, which carries no envelope.
type SNSMetadata struct {
	// TopicARN is the topic the message was published to.
	TopicARN string
	// MessageID is the SNS message ID, the same for every subscription the
	// publish fanned out to (unlike Message.ID, the SQS message ID).
	MessageID string
	// Subject is the publish's Subject, or "".
	Subject string
	// Timestamp is when SNS accepted the publish.
	Timestamp time.Time
	// Type is the envelope's Type, "Notification" for a published message.
	Type string
	// SequenceNumber is the SNS sequence number of a message from a FIFO
	// topic, or "".
	SequenceNumber string
	// UnsubscribeURL is the URL that removes the subscription that
	// delivered the message.
	UnsubscribeURL string
	// SignatureVersion, Signature and SigningCertURL are SNS's signature of
	// the envelope, for handlers that verify it.
	SignatureVersion, Signature, SigningCertURL string
}

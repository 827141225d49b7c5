package settle

import "time"

// SNSMetadata is worker.SNSMetadata (an alias of this type, so that
// Message and worker.Message stay identical); its documentation is there.
type SNSMetadata struct {
	TopicARN                                    string
	MessageID                                   string
	Subject                                     string
	Timestamp                                   time.Time
	Type                                        string
	SequenceNumber                              string
	UnsubscribeURL                              string
	SignatureVersion, Signature, SigningCertURL string
}

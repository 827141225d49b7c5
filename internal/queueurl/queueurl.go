// Package queueurl derives a queue's URL from its ARN without a call, for
// the Lambda adapter, which has only the event's eventSourceARN when it is
// given no SQS client to ask.
package queueurl

import "github.com/sqsworker/sqsworker/queueref"

// FromARN returns the queue's URL at SQS's public endpoint for the ARN's
// region and partition, https://sqs.REGION.amazonaws.com/ACCOUNT/NAME,
// without a call. LocalStack and emulators give queues other URLs:
// queueref.Resolve asks the endpoint instead.
func FromARN(a queueref.ARN) string {
	domain := "amazonaws.com"
	switch a.Partition {
	case "aws-cn":
		domain = "amazonaws.com.cn"
	case "aws-iso":
		domain = "c2s.ic.gov"
	case "aws-iso-b":
		domain = "sc2s.sgov.gov"
	}
	return "https://sqs." + a.Region + "." + domain + "/" + a.Account + "/" + a.Name
}

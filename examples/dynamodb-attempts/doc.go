// Command dynamodb-attempts shows the exact attempt counter of
// retry/dynamocounter next to SQS's ApproximateReceiveCount.
//
// By default the worker numbers attempts with ApproximateReceiveCount, which
// also counts receives that never reached a handler: here an operator peeks
// at the queue (dlq.Inspect receives the message and releases it) before the
// worker starts, so SQS's count is one ahead from the first attempt on, and
// a message would reach the dead-letter queue one retry early. The
// counter of dynamocounter.New instead counts handler starts, with one atomic
// UpdateItem (ADD attempts :1) per start in a DynamoDB table keyed by
// message ID, with a TTL attribute so old items expire.
//
// dynamocounter.CreateTable makes the table (partition key messageId, TTL
// on expiresAt); the example deletes it, and its queues, at the end.
//
// Run it against the local emulators (fauxqs and DynamoDB Local), which
// with-aws.sh starts (and stops afterwards) when no endpoint is configured:
//
//	bash localstack/with-aws.sh go run ./examples/dynamodb-attempts
//
// or against LocalStack or any endpoint the AWS SDK is configured for. It
// exits 0 only if the handler saw attempts 1, 2, 3 while SQS counted 2, 3, 4.
package main

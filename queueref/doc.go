// Package queueref is how sqsworker names queues: every entry point of the
// library and the CLI takes a queue as a name, a URL or an ARN, and means
// the same queue by it.
//
//   - A name (orders, orders.fifo) is the queue of that name in the
//     client's region and account.
//   - A URL (https://sqs.us-east-1.amazonaws.com/123456789012/orders, or an
//     emulator's) is used as it is.
//   - An ARN (arn:aws:sqs:eu-west-1:123456789012:orders) is the queue in the
//     ARN's own region and account, whatever the client's region.
//
// Resolve turns a reference into a URL (one GetQueueUrl call for a name or
// an ARN); Name, FIFO and ParseARN read a reference without a call; Check
// tells a malformed reference from one that names no queue.
package queueref

// Package dynamocounter is an exact attempt counter backed by Amazon DynamoDB:
// a [retry.AttemptCounter] that counts handler starts, not receives.
//
// SQS's ApproximateReceiveCount (the default count, retry.ReceiveCount) also
// counts receives that never reached a handler, so a message can run out of
// attempts early. The counter [New] returns instead performs one UpdateItem
// per handler start,
//
//	UpdateItem  Key {messageId: <SQS message ID>}
//	            UpdateExpression "ADD attempts :1 SET expiresAt = :expires"
//	            ReturnValues UPDATED_NEW
//
// and returns the new value of attempts: 1 on the first start, 2 on the
// second, and so on. The increment is atomic, so concurrent starts of the same
// message (after a visibility timeout, on two consumers) get distinct numbers.
// Every update also pushes expiresAt (epoch seconds) to now + TTL, and the
// table's time-to-live setting deletes items some time after that, so the
// table does not grow without bound. The default TTL, 15 days, outlives SQS's
// longest retention period (14 days); a TTL shorter than the queue's
// retention period lets a count restart at 1 (more retries, never fewer).
// After a handler snoozed its message (retry.Snooze), the counter takes the
// attempt back with one UpdateItem that adds −1 to attempts on condition
// that it is above 0.
//
// # Table
//
// The table has a partition key messageId of type S and no sort key; items
// hold attempts (N) and expiresAt (N). [CreateTable] creates it on demand
// (PAY_PER_REQUEST), waits until it is ACTIVE and enables TTL on expiresAt; it
// is idempotent, and checks an existing table's key schema and TTL attribute.
//
// # IAM
//
// The counter needs dynamodb:UpdateItem on the table. CreateTable also needs
// dynamodb:CreateTable, dynamodb:DescribeTable, dynamodb:DescribeTimeToLive and
// dynamodb:UpdateTimeToLive; run it from a deployment step if the worker's
// role should not hold those.
//
// # Errors
//
// Errors say what to do, wrap the SDK's error (errors.As finds
// *types.ResourceNotFoundException and the like), and match [ErrTableNotFound]
// or [ErrThrottled] with errors.Is where that applies. The SDK client's own
// retries apply before an error is returned.
//
// The counter and CreateTable take the [API] interface, which
// *dynamodb.Client satisfies; tests can pass a small fake.
package dynamocounter

// Command idempotency shows package idempotency keeping a non-idempotent
// job (charging an order) to one run on top of SQS's at-least-once
// delivery.
//
// A producer sends order 7 three times (it retried) and order 8 once. The
// worker's handler is wrapped in an idempotency.Guard keyed by the order ID
// (idempotency.JSONKey("order_id")), on a DynamoDB table made by
// idempotency.CreateTable:
//
//   - order 7's first delivery takes the lock and charges the order; the
//     charge takes 3 s, longer than the queue's 2 s visibility timeout, so
//     the heartbeat extends the message and the Guard moves the lock with
//     it. The two other deliveries find the job in progress and are
//     snoozed (retry.Snooze: not a failed attempt, never dead-lettered);
//     when they come back the job is completed and they are deleted without
//     charging.
//   - order 8 is charged, and then its delete is lost, as if the process
//     had been killed between the handler's success and the delete. SQS
//     delivers it again after the visibility timeout; the Guard finds it
//     completed and the redelivery is deleted without charging.
//
// The example prints every settlement, the record of order 7 and the
// Guard's DynamoDB requests, deletes its table and queues, and exits 0 only
// if each order was charged exactly once and nothing was dead-lettered.
//
// Run it against the local emulators (fauxqs and DynamoDB Local), which
// with-aws.sh starts (and stops afterwards) when no endpoint is configured:
//
//	bash localstack/with-aws.sh go run ./examples/idempotency
//
// or against LocalStack or any endpoint the AWS SDK is configured for.
package main

// Command dlq-redrive shows the dead-letter side of sqsworker: jobs a
// handler rejects with retry.Permanent go to the dead-letter queue at once
// with their reason; dlq.Inspect reads them back with that provenance; and
// after a fix, dlq.Redrive moves back exactly the jobs the fix covers — a
// dry run first, then the move — while the ones that are really broken stay.
//
// The story: an order handler rejects orders for products its catalogue
// does not know yet, and orders whose body is not valid JSON. The catalogue
// is then updated; the redrive filters on the error text ("unknown
// product"), and the worker, still running, completes the redriven orders.
//
// Redrive uses a server-side message move task when it can; with a filter
// (as here) or on an endpoint without move tasks (the fauxqs emulator) it
// moves the messages itself: receive, send to the source, then delete, so a
// failure leaves a duplicate at worst, never a loss. The moved messages are
// new messages to SQS, without the provenance attributes.
//
// Run it against the local emulators, which with-aws.sh starts (and stops
// afterwards) when no endpoint is configured:
//
//	bash localstack/with-aws.sh go run ./examples/dlq-redrive
//
// or against LocalStack or any endpoint the AWS SDK is configured for. It
// exits 0 only if the fixed orders were completed after the redrive and the
// malformed ones are still in the dead-letter queue.
package main

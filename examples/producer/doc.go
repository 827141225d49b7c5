// Command producer shows the sending side: it enqueues 200 typed jobs
// through the producer's batcher (20 SendMessageBatch calls), one job
// delayed by two days (shown by its due time: it stays in the queue), and
// one report whose 2 MiB body goes to S3 and comes back transparently; a
// worker with a typed JSON handler then runs the jobs that are due.
//
// Run it against the local emulators (fauxqs serves SQS and S3), which
// with-aws.sh starts (and stops afterwards) when no endpoint is configured:
//
//	bash localstack/with-aws.sh go run ./examples/producer
//
// or against LocalStack or any endpoint the AWS SDK is configured for
// (AWS_ENDPOINT_URL, or AWS_ENDPOINT_URL_SQS and AWS_ENDPOINT_URL_S3). It
// exits 0 only if every due job ran once, the report arrived whole, the
// delayed job waits with its due time, and the payload object is gone
// once its message was deleted; it deletes its queues and bucket at the
// end.
package main

// Command heartbeat shows a job that runs longer than its queue's
// visibility timeout being kept invisible by the worker's heartbeat, so it
// runs once and no other consumer sees it meanwhile.
//
// The queue's visibility timeout is 2 s and the job takes 5 s. Without a
// heartbeat SQS would hand the message to another consumer after 2 s and the
// job would run twice. The worker extends the visibility in batches
// (ChangeMessageVisibilityBatch) while the handler runs; this program prints
// each extension as it goes out, and a second, plain consumer polls the
// queue the whole time and must receive nothing.
//
// Run it against the local emulators, which with-aws.sh starts (and stops
// afterwards) when no endpoint is configured:
//
//	bash localstack/with-aws.sh go run ./examples/heartbeat
//
// or against LocalStack or any endpoint the AWS SDK is configured for. It
// exits 0 only if the job ran once, was extended, and the other consumer
// saw nothing.
package main

// Command basic is the smallest complete sqsworker program: it creates a
// queue with its dead-letter queue, sends ten jobs, runs a worker over
// them, and stops the worker once every job is done.
//
// Run it against the local emulators, which with-aws.sh starts (and stops
// afterwards) when no endpoint is configured:
//
//	bash localstack/with-aws.sh go run ./examples/basic
//
// or against LocalStack or any endpoint the AWS SDK is configured for
// (AWS_ENDPOINT_URL, AWS_REGION and credentials in the environment). It
// exits 0 only if every job was handled exactly once and both queues end
// empty; it deletes its queues at the end.
package main

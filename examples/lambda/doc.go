// Command lambda is an AWS Lambda function that processes orders from an SQS
// queue with sqsworker's job code: the same worker.Handler a long-lived
// worker.Worker would run, wrapped by worker/sqslambda. Failed orders are
// retried after the retry policy's delay (not the queue's visibility
// timeout), and bad orders go to the dead-letter queue with their reason.
//
// Deployed (see README.md for the event source mapping and IAM), it calls
// lambda.Start. With SQSWORKER_LOCAL=1 it runs on this machine instead,
// invoked by sqslambda.RunLocal the way Lambda's event source mapping would
// invoke it:
//
//	SQSWORKER_LOCAL=1 bash localstack/with-aws.sh go run ./examples/lambda
//
// creates a queue pair, sends six sample orders (three good, one that fails
// once, two bad), runs the function until every order is settled, prints
// where each one ended, and deletes the queues. It exits 0 only if the good
// orders were processed, the flaky one after a retry of about a second,
// and the bad ones are in the dead-letter queue.
//
//	SQSWORKER_LOCAL=1 SQSWORKER_QUEUE_URL=http://... go run ./examples/lambda
//
// runs the function against an existing queue until interrupted, saying
// what it polls, a line a minute while it polls (with the number of
// invocations), and what became of the records when Ctrl-C stops it.
//
// Run outside Lambda without SQSWORKER_LOCAL, it exits 2 with these two
// command lines rather than lambda.Start's complaint about its variables.
//
// Environment:
//
//	SQSWORKER_LOCAL=1         run locally instead of lambda.Start
//	SQSWORKER_QUEUE_URL       local mode: the queue to consume (else a demo queue pair)
//	SQSWORKER_RETRY_POLICY    the retry policy, as SNS delivery policy JSON (default: retryPolicyJSON)
package main

// Command delivery-policy shows failed jobs retried on an SNS-style
// delivery policy: the schedule it gives, each retry arriving against it,
// a job that asks for its own delay with retry.After, and a job that runs
// out of retries and lands in the dead-letter queue with the reason.
//
// The policy is SNS's JSON shape,
//
//	{"healthyRetryPolicy": {"minDelayTarget": 1, "maxDelayTarget": 3,
//	                        "numRetries": 3, "backoffFunction": "linear"}}
//
// three retries 1 s, 2 s and 3 s after each failure. The worker applies a
// delay by setting the message's visibility timeout (no sleeping in
// process), so the retry comes from SQS and survives a restart. The example
// turns jitter off to compare arrivals with the schedule; by default a
// delivery policy draws each delay from [d/2, d].
//
// Before running, dlq.Lint checks the queue against the policy (is
// maxReceiveCount above the attempts? does retention outlast the
// schedule?).
//
// Run it against the local emulators, which with-aws.sh starts (and stops
// afterwards) when no endpoint is configured:
//
//	bash localstack/with-aws.sh go run ./examples/delivery-policy
//
// or against LocalStack or any endpoint the AWS SDK is configured for. It
// exits 0 only if no retry came before its schedule, the flaky and
// throttled jobs succeeded, and the broken job is in the dead-letter queue
// after its last attempt.
package main

// Command demo runs sqsworker end to end against a local AWS and shows the
// library's promise holding: every job is done, waiting for its next retry,
// or in the dead-letter queue with its reason.
//
// It creates a fresh queue and dead-letter queue (unique names), sends a few
// hundred jobs and runs a worker over them while a progress line counts what
// happens:
//
//   - ordinary jobs are done and deleted;
//   - one long job runs past the queue's visibility timeout (12 s against
//     5 s), kept invisible by the heartbeat: each extension is printed, and
//     the job runs once;
//   - flaky jobs fail and are retried on an SNS-style delivery policy, each
//     retry printed against the schedule ("job 17 retry 2 at +7.1s
//     (schedule +7.0s)");
//   - a job that keeps failing runs out of retries, and poison jobs fail
//     permanently: they land in the dead-letter queue with their reason,
//     which the demo reads back with dlq.Inspect;
//   - a "fix" is deployed and the one job it fixes is redriven from the
//     dead-letter queue to the source with a filtered dlq.Redrive, and done.
//
// It closes with a reconciliation computed from facts — what was sent, what
// the handlers completed, what the dead-letter queue holds:
//
//	sent 300 = done 297 + in DLQ 3, lost 0, duplicates 0, SQS requests per job N
//	SQS cost per million jobs $C (the worker's requests at $0.40 per million, …)
//
// N and C (about N × $0.40) vary from run to run: they depend on how full
// the receive and delete batches are while the jobs arrive, and on the
// empty long polls while the worker waits for retries; the line between
// them breaks the requests down by API.
//
// and exits non-zero if any job is lost. It takes about 20 seconds and
// deletes its queues at the end (it keeps them, and says so, when something
// went wrong). Ctrl-C stops it cleanly within a few seconds.
//
// Run it with
//
//	make demo
//
// which starts the offline emulators (fauxqs and DynamoDB Local) when no
// endpoint is configured and stops them afterwards, or against any endpoint
// the AWS SDK is configured for (LocalStack, say):
//
//	AWS_ENDPOINT_URL=http://127.0.0.1:4566 AWS_REGION=us-east-1 \
//	  AWS_ACCESS_KEY_ID=test AWS_SECRET_ACCESS_KEY=test go run ./examples/demo
//
// On a terminal the progress line is redrawn in place; otherwise (CI, a
// pipe) it is printed every few seconds.
package main

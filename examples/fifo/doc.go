// Command fifo shows sqsworker on a FIFO queue: the messages of one message
// group are handled one at a time, in order, while different groups run in
// parallel — and a failure holds its group back until the retry succeeds,
// so order survives retries.
//
// Three bank accounts each get four ledger entries (message group = the
// account). The second entry of account-b fails once; it is retried after
// 1 s, and account-b's later entries wait for it while account-a and
// account-c carry on. The retry policy here is a plain retry.PolicyFunc
// (any function of the attempt works, not only a delivery policy).
//
// dlq.Setup makes the FIFO pair (name.fifo and name-dlq.fifo; a FIFO
// queue's dead-letter queue must be FIFO too).
//
// Run it against the local emulators, which with-aws.sh starts (and stops
// afterwards) when no endpoint is configured:
//
//	bash localstack/with-aws.sh go run ./examples/fifo
//
// or against LocalStack or any endpoint the AWS SDK is configured for. It
// exits 0 only if every account's entries were applied once each, in order.
package main

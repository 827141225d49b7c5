// Command unique shows package unique keeping one job per key at enqueue,
// across every producer that shares its DynamoDB table.
//
// A producer asks three times for the report of account 42 (a user
// clicking again, two services asking at once): the first send claims the
// key report/acct-42 and is enqueued, the two others are refused with
// unique.ErrDuplicate and learn the message ID of the job that holds the
// key. It also sends a digest that may go out once per hour (Key.For):
// the second is refused too.
//
// A worker then runs the jobs through unique's Store.Middleware, with
// Store.Settled as its OnSettled hook. The report fails once (a retry): a
// send while it waits for its retry is still refused, since a retry keeps
// the key. When the report succeeds, the Middleware frees the key (just
// before the message is deleted) and the next send is accepted. The digest's key stays held after its job
// ran: only the end of its hour frees it.
//
// The example prints each send and settlement and the Store's counters,
// deletes its table and queues, and exits 0 only if exactly the expected
// sends were accepted.
//
// Run it against the local emulators (fauxqs and DynamoDB Local), which
// with-aws.sh starts (and stops afterwards) when no endpoint is configured:
//
//	bash localstack/with-aws.sh go run ./examples/unique
//
// or against LocalStack or any endpoint the AWS SDK is configured for.
package main

// Command fanout is the source documents' rental-order architecture with
// sqsworker: one SNS topic fanning orders out to two queues, a worker on
// each, and a dead-letter queue at every level.
//
//   - rental-fulfilment subscribes with raw message delivery: its handler
//     gets the published order and its message attributes as they are.
//   - rental-billing subscribes without raw delivery and with a filter
//     policy (order-status confirmed or canceled): SNS wraps each order in
//     its JSON envelope, and fanout.Unwrap hands the handler the order, its
//     attributes and SNS's metadata (topic, SNS message ID, subject, time).
//   - Each queue has its own dead-letter queue for what its handler rejects
//     (a malformed order goes there with retry.Permanent's reason), and
//     each subscription has one for what SNS cannot deliver.
//
// fanout.Setup creates the chain (and would change nothing on a second
// run); fanout.Lint — what `sqsworker doctor` runs — checks it; a
// producer for the topic (producer.NewTopic) publishes the six orders in
// one PublishBatch call. Two orders then sit in billing's subscription
// dead-letter queue, as SNS leaves them
// when a delivery fails (a deleted queue, a queue policy refusing SNS); the
// emulator never fails a delivery, so the example puts them there in the
// shape SNS does. fanout.Redrive moves them to the billing queue — not to
// the topic, which would deliver them to fulfilment a second time — and
// billing's worker completes them.
//
// Run it against the local emulators (fauxqs emulates SNS too):
//
//	bash localstack/with-aws.sh go run ./examples/fanout
//
// It exits 0 only if every order reached each queue it should, once, with
// its attributes, and the dead-letter queues hold exactly what they should.
package main

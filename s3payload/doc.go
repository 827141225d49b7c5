// Package s3payload carries message bodies larger than SQS allows through
// S3, in the wire format of AWS's SQS extended clients for Java
// (amazon-sqs-java-extended-client-lib) and Python (sqs-extended-client):
// a message offloaded by a Java or Python producer is read by a Go worker,
// and the other way round.
//
//	store, err := s3payload.New(s3.NewFromConfig(cfg), "my-payload-bucket")
//	p, err := producer.New(sqsClient, queueURL, func(o *producer.Options) { o.Offloader = store })
//	h := worker.Chain(handler, store.Middleware())
//	w, err := worker.New(sqsClient, queueURL, h, func(o *worker.Options) { o.OnSettled = store.Settled })
//
// # Wire format
//
// An offloaded message's body is a pointer to the S3 object holding the
// original body, as the Java client's Jackson serialisation writes it:
//
//	["software.amazon.payloadoffloading.PayloadS3Pointer",{"s3BucketName":"my-payload-bucket","s3Key":"5e8a0c71-d94b-4f3a-b6e2-08c1f7a9d4b6"}]
//
// and the message carries a Number attribute with the original body's size
// in bytes: SQSLargePayloadSize (the Java client's default and the name
// every version of both clients reads) or ExtendedPayloadSize (the Python
// client's default; see Options.SizeAttribute). The attribute, not the
// body, marks a message as offloaded. Reading accepts both attribute names,
// both class names (software.amazon.payloadoffloading.PayloadS3Pointer and
// the Java client 1.0's com.amazon.sqs.javamessaging.MessageS3Pointer,
// which the Python client writes in its legacy mode), any JSON whitespace
// and unknown fields. Lookup reads a received message's pointer. Objects are named with a
// random UUID after an optional Options.KeyPrefix, as the Java client names
// them. testdata holds each client's format as fixtures.
//
// # Sending
//
// Store implements producer.Offloader: the producer hands it every message,
// and it stores the body of those larger than Options.Threshold (body and
// attributes as SQS counts them; default 1 MiB, SQS's limit) and sends the
// pointer instead. The size attribute takes one of SQS's 10 attribute
// slots. On a FIFO queue with content-based deduplication the pointer (a
// fresh UUID each time) defeats deduplication: give such messages a
// DeduplicationID.
//
// A producer for an SNS topic (producer.NewTopic) offloads the same way,
// within SNS's 256 KiB: set Options.Threshold to at most that. Its pointer
// reaches every queue subscribed to the topic (with raw delivery as it is;
// in SNS's envelope, for worker.Chain(h, fanout.Unwrap(),
// store.Middleware())), so such objects
// are shared: leave deleting them to the bucket's lifecycle rule, not to
// Store.Settled, which would delete one when the first queue is done.
//
// # Receiving
//
// Store.Middleware gives the handler the original body (and the message
// attributes without the size attribute); it changes only the handler's
// view, so the runtime settles, dead-letters and redrives the message as
// received, pointer and all. A dead-lettered or redriven message therefore
// still points to its object: the object must outlive the message.
//
// # Dead-letter copies
//
// Store implements dlq.Offloader too (OffloadBody): set it as the worker's
// (or sqslambda's) Options.DeadLetterOffloader, and a failed message whose
// dead-letter copy would not fit a dead-letter queue smaller than its
// source goes there as a pointer, with its full provenance, whatever
// Options.Threshold says. The Middleware reads such a copy after a redrive
// as it read the original; its object is left to the lifecycle rule like
// every dead-lettered message's.
//
// # Deleting objects
//
// An object is deleted only after its message: Store.Settled, set as the
// worker's settlement hook (worker.Options.OnSettled), deletes the object
// of a message once SQS has confirmed the message's delete after its job
// succeeded; Store.Delete does the same for a message given directly. A
// failed attempt, a retry, a snooze, a due-time wait (a re-sent copy keeps
// the pointer), a dead-letter move and a redrive leave the object in
// place, and so does a delete SQS confirmed only after the message's
// visibility ran out (Settlement.Late), since another consumer may have the
// message by then. Objects of messages that leave SQS otherwise (a purge,
// retention expiry, a DLQ message deleted by hand, a late delete, a failed
// DeleteObject, and every message consumed on AWS Lambda, where the event source mapping
// deletes records after the function returns) are not deleted: give the
// bucket a lifecycle rule that expires objects some days after the longest
// retention of the queues involved (14 days at most).
//
// # IAM
//
// Producers: s3:PutObject on the bucket's objects. Consumers: s3:GetObject,
// and s3:DeleteObject for Delete. With SSE-KMS (Options.PutObject), the
// key's kms:GenerateDataKey and kms:Decrypt.
package s3payload

package conformance

import (
	"fmt"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
)

func batchBehaviours() []behaviour {
	return []behaviour{
		{name: "SendMessageBatchPerEntryResults", run: sendMessageBatchPerEntry},
		{name: "DeleteMessageBatchPartialFailure", run: deleteMessageBatchPartialFailure},
		{name: "ChangeMessageVisibilityBatchPartialFailure", run: changeVisibilityBatchPartialFailure},
		{name: "BatchEntryIdsNotDistinct", run: batchIdsNotDistinct},
		{name: "TooManyEntriesInBatchRequest", run: batchTooManyEntries},
		{name: "EmptyBatchRequest", run: batchEmpty},
		{name: "InvalidBatchEntryId", run: batchInvalidID},
		{name: "SendMessageBatchSizeLimit", run: sendMessageBatchSizeLimit},
	}
}

// batchFailure checks a batch's Failed list: exactly the wanted Ids, each
// with its code and SenderFault.
func (e *env) batchFailures(what string, failed []types.BatchResultErrorEntry, want map[string]string) {
	e.t.Helper()
	if len(failed) != len(want) {
		e.t.Errorf("%s: %d failed entries %v, want %d", what, len(failed), describeFailures(failed), len(want))
	}
	for _, f := range failed {
		id := aws.ToString(f.Id)
		code, ok := want[id]
		if !ok {
			e.t.Errorf("%s: entry %q failed (%s: %s), want it to succeed", what, id, aws.ToString(f.Code), aws.ToString(f.Message))
			continue
		}
		if aws.ToString(f.Code) != code {
			e.t.Errorf("%s: entry %q failed with code %q, want %q", what, id, aws.ToString(f.Code), code)
		}
		if !f.SenderFault {
			e.t.Errorf("%s: entry %q: SenderFault false, want true", what, id)
		}
	}
}

func describeFailures(failed []types.BatchResultErrorEntry) []string {
	var out []string
	for _, f := range failed {
		out = append(out, fmt.Sprintf("%s:%s", aws.ToString(f.Id), aws.ToString(f.Code)))
	}
	return out
}

func successIDs[T any](entries []T, id func(T) *string) map[string]bool {
	out := map[string]bool{}
	for _, s := range entries {
		out[aws.ToString(id(s))] = true
	}
	return out
}

// SendMessageBatch reports each entry on its own: the good ones in
// Successful with their Id, MessageId and digests, a bad one in Failed with
// its Id, code and SenderFault, and only the good ones are enqueued.
func sendMessageBatchPerEntry(e *env) {
	url := e.createQueue("sendbatch", nil)
	attrs := map[string]types.MessageAttributeValue{"kind": stringAttr("batch")}
	entries := []types.SendMessageBatchRequestEntry{
		{Id: aws.String("ok-1"), MessageBody: aws.String("alpha")},
		{Id: aws.String("bad"), MessageBody: aws.String("control char \x01 is not allowed")},
		{Id: aws.String("ok_2"), MessageBody: aws.String("gamma"), MessageAttributes: attrs},
	}
	out, err := e.api.SendMessageBatch(e.ctx(), &sqs.SendMessageBatchInput{QueueUrl: aws.String(url), Entries: entries})
	if err != nil {
		e.t.Fatalf("SendMessageBatch: %v", err)
	}
	e.batchFailures("SendMessageBatch", out.Failed, map[string]string{"bad": "InvalidMessageContents"})
	ids := map[string]string{}
	for _, s := range out.Successful {
		id := aws.ToString(s.Id)
		ids[id] = aws.ToString(s.MessageId)
		want := map[string]string{"ok-1": "alpha", "ok_2": "gamma"}[id]
		if got := aws.ToString(s.MD5OfMessageBody); got != md5Hex(want) {
			e.t.Errorf("entry %q: MD5OfMessageBody %s, want %s", id, got, md5Hex(want))
		}
		if id == "ok_2" && aws.ToString(s.MD5OfMessageAttributes) != attributesMD5(attrs) {
			e.t.Errorf("entry %q: MD5OfMessageAttributes %s, want %s", id, aws.ToString(s.MD5OfMessageAttributes), attributesMD5(attrs))
		}
		if aws.ToString(s.MessageId) == "" {
			e.t.Errorf("entry %q: no MessageId", id)
		}
	}
	if len(ids) != 2 || ids["ok-1"] == "" || ids["ok_2"] == "" {
		e.t.Fatalf("Successful entries %v, want ok-1 and ok_2", ids)
	}
	got := map[string]string{}
	for range 5 {
		for _, m := range e.recv(url, 10, 1) {
			got[aws.ToString(m.Body)] = aws.ToString(m.MessageId)
		}
		if len(got) >= 2 {
			break
		}
	}
	if len(got) != 2 || got["alpha"] != ids["ok-1"] || got["gamma"] != ids["ok_2"] {
		e.t.Errorf("received %v, want alpha and gamma with the MessageIds SendMessageBatch returned (%v)", got, ids)
	}
}

// DeleteMessageBatch deletes the good entries and reports a malformed
// receipt handle as a failed entry with ReceiptHandleIsInvalid.
func deleteMessageBatchPartialFailure(e *env) {
	url := e.createQueue("delbatch", map[string]string{"VisibilityTimeout": "1"})
	e.send(url, "delete in batch")
	m := e.recvOne(url, "receive")
	out, err := e.api.DeleteMessageBatch(e.ctx(), &sqs.DeleteMessageBatchInput{QueueUrl: aws.String(url), Entries: []types.DeleteMessageBatchRequestEntry{
		{Id: aws.String("good"), ReceiptHandle: m.ReceiptHandle},
		{Id: aws.String("bad"), ReceiptHandle: aws.String("garbage")},
	}})
	if err != nil {
		e.t.Fatalf("DeleteMessageBatch: %v", err)
	}
	ok := successIDs(out.Successful, func(s types.DeleteMessageBatchResultEntry) *string { return s.Id })
	if e.quirk(QuirkDeleteAcceptsAnyReceiptHandle) {
		if !ok["good"] || !ok["bad"] || len(out.Failed) != 0 {
			e.t.Errorf("quirk no longer holds: Successful %v Failed %v, want both entries successful", ok, describeFailures(out.Failed))
		}
	} else {
		if !ok["good"] || len(ok) != 1 {
			e.t.Errorf("DeleteMessageBatch Successful %v, want exactly [good]", ok)
		}
		e.batchFailures("DeleteMessageBatch", out.Failed, map[string]string{"bad": "ReceiptHandleIsInvalid"})
	}
	e.sleep(1500 * time.Millisecond)
	e.wantEmpty(url, 1, "after DeleteMessageBatch deleted the message")
}

// ChangeMessageVisibilityBatch applies the good entries and reports a
// malformed receipt handle as a failed entry with ReceiptHandleIsInvalid.
func changeVisibilityBatchPartialFailure(e *env) {
	url := e.createQueue("chgbatch", map[string]string{"VisibilityTimeout": "1"})
	e.send(url, "extend in batch")
	m := e.recvOne(url, "receive")
	out, err := e.api.ChangeMessageVisibilityBatch(e.ctx(), &sqs.ChangeMessageVisibilityBatchInput{QueueUrl: aws.String(url), Entries: []types.ChangeMessageVisibilityBatchRequestEntry{
		{Id: aws.String("good"), ReceiptHandle: m.ReceiptHandle, VisibilityTimeout: 5},
		{Id: aws.String("bad"), ReceiptHandle: aws.String("garbage"), VisibilityTimeout: 5},
	}})
	if err != nil {
		e.t.Fatalf("ChangeMessageVisibilityBatch: %v", err)
	}
	ok := successIDs(out.Successful, func(s types.ChangeMessageVisibilityBatchResultEntry) *string { return s.Id })
	if !ok["good"] || len(ok) != 1 {
		e.t.Errorf("ChangeMessageVisibilityBatch Successful %v, want exactly [good]", ok)
	}
	e.batchFailures("ChangeMessageVisibilityBatch", out.Failed, map[string]string{"bad": "ReceiptHandleIsInvalid"})
	e.sleep(1500 * time.Millisecond)
	e.wantEmpty(url, 0, "1.5 s after the batch extended the visibility to 5 s (queue VisibilityTimeout 1 s)")
}

// batchCalls makes one call of each batch operation with the given entry
// Ids (receipt handles are placeholders: request-level errors come first)
// and yields its error.
func batchCalls(e *env, url string, ids []string) func(yield func(string, error) bool) {
	return func(yield func(string, error) bool) {
		send := []types.SendMessageBatchRequestEntry{}
		del := []types.DeleteMessageBatchRequestEntry{}
		chg := []types.ChangeMessageVisibilityBatchRequestEntry{}
		for _, id := range ids {
			send = append(send, types.SendMessageBatchRequestEntry{Id: aws.String(id), MessageBody: aws.String("b-" + id)})
			del = append(del, types.DeleteMessageBatchRequestEntry{Id: aws.String(id), ReceiptHandle: aws.String("garbage")})
			chg = append(chg, types.ChangeMessageVisibilityBatchRequestEntry{Id: aws.String(id), ReceiptHandle: aws.String("garbage"), VisibilityTimeout: 5})
		}
		q := aws.String(url)
		_, err := e.api.SendMessageBatch(e.ctx(), &sqs.SendMessageBatchInput{QueueUrl: q, Entries: send})
		if !yield("SendMessageBatch", err) {
			return
		}
		_, err = e.api.DeleteMessageBatch(e.ctx(), &sqs.DeleteMessageBatchInput{QueueUrl: q, Entries: del})
		if !yield("DeleteMessageBatch", err) {
			return
		}
		_, err = e.api.ChangeMessageVisibilityBatch(e.ctx(), &sqs.ChangeMessageVisibilityBatchInput{QueueUrl: q, Entries: chg})
		yield("ChangeMessageVisibilityBatch", err)
	}
}

// Two entries with the same Id fail the whole request with
// BatchEntryIdsNotDistinct, and nothing is sent.
func batchIdsNotDistinct(e *env) {
	url := e.createQueue("dupids", nil)
	for what, err := range batchCalls(e, url, []string{"a", "b", "a"}) {
		wantError[*types.BatchEntryIdsNotDistinct](e.t, err, what+" with a duplicate entry Id")
	}
	e.wantEmpty(url, 1, "after a SendMessageBatch refused for duplicate Ids")
}

// Eleven entries fail the whole request with TooManyEntriesInBatchRequest.
func batchTooManyEntries(e *env) {
	url := e.createQueue("elevenids", nil)
	var ids []string
	for i := range 11 {
		ids = append(ids, fmt.Sprint("e", i))
	}
	for what, err := range batchCalls(e, url, ids) {
		wantError[*types.TooManyEntriesInBatchRequest](e.t, err, what+" with 11 entries")
	}
	e.wantEmpty(url, 1, "after a SendMessageBatch refused for 11 entries")
}

// No entries fail the request with EmptyBatchRequest.
func batchEmpty(e *env) {
	url := e.createQueue("noids", nil)
	for what, err := range batchCalls(e, url, nil) {
		wantError[*types.EmptyBatchRequest](e.t, err, what+" with no entries")
	}
}

// An entry Id outside [A-Za-z0-9_-]{1,80} fails the request with
// InvalidBatchEntryId.
func batchInvalidID(e *env) {
	url := e.createQueue("badid", nil)
	for what, err := range batchCalls(e, url, []string{"ok", "not:valid"}) {
		wantError[*types.InvalidBatchEntryId](e.t, err, what+` with entry Id "not:valid"`)
	}
}

// A SendMessageBatch may carry up to 1 MiB in all (bodies and attributes,
// since August 2025; the producer packs batches by it): three 300 KiB
// messages go in one call, four fail the whole request with
// BatchRequestTooLong and nothing is enqueued.
func sendMessageBatchSizeLimit(e *env) {
	url := e.createQueue("batchbytes", nil)
	body := strings.Repeat("x", 300<<10)
	batch := func(n int) *sqs.SendMessageBatchInput {
		in := &sqs.SendMessageBatchInput{QueueUrl: aws.String(url)}
		for i := range n {
			in.Entries = append(in.Entries, types.SendMessageBatchRequestEntry{Id: aws.String(fmt.Sprint("e", i)), MessageBody: aws.String(body)})
		}
		return in
	}
	_, err := e.api.SendMessageBatch(e.ctx(), batch(4))
	wantError[*types.BatchRequestTooLong](e.t, err, "SendMessageBatch of 4 × 300 KiB")
	e.wantEmpty(url, 1, "after a SendMessageBatch refused as too long")
	out, err := e.api.SendMessageBatch(e.ctx(), batch(3))
	if err != nil {
		e.t.Fatalf("SendMessageBatch of 3 × 300 KiB (under 1 MiB): %v", err)
	}
	if len(out.Successful) != 3 || len(out.Failed) != 0 {
		e.t.Errorf("SendMessageBatch of 3 × 300 KiB: %d sent, failed %v; want all 3", len(out.Successful), describeFailures(out.Failed))
	}
}

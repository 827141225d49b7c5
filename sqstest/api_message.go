package sqstest

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"slices"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/aws/smithy-go"

	"github.com/sqsworker/sqsworker/internal/sqslimit"
)

// moveTaskPoll is how often a long poll rechecks while a move task runs.
const moveTaskPoll = 50 * time.Millisecond

// validBatchID reports whether id is a batch entry Id SQS accepts: 1 to 80
// characters, each a letter, a digit, '-' or '_'.
func validBatchID(id string) bool {
	if len(id) < 1 || len(id) > 80 {
		return false
	}
	for _, c := range []byte(id) {
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9', c == '-', c == '_':
		default:
			return false
		}
	}
	return true
}

// checkBatch applies SQS's whole-request rules for batch calls.
func checkBatch(ids []string) error {
	if len(ids) == 0 {
		return errEmptyBatch()
	}
	if len(ids) > sqslimit.MaxBatchEntries {
		return errTooManyEntries(len(ids))
	}
	for i, id := range ids {
		if !validBatchID(id) {
			return errInvalidBatchEntryID(id)
		}
		if slices.Contains(ids[:i], id) { // at most ten: no map needed
			return errIDsNotDistinct(id)
		}
	}
	return nil
}

// sendEntry is one message to send, from SendMessage or a batch entry.
type sendEntry struct {
	body    *string
	delay   int32
	attrs   map[string]types.MessageAttributeValue
	sysAttr map[string]types.MessageSystemAttributeValue
	groupID *string
	dedupID *string
}

type sendResult struct {
	id, md5Body, md5Attrs, seq string
}

// sendLocked validates and stores one message. f.mu must be held.
func (f *Fake) sendLocked(q *queue, e sendEntry, now time.Time) (sendResult, error) {
	if e.body == nil || *e.body == "" {
		return sendResult{}, missingParameter("MessageBody")
	}
	if !validBody(*e.body) {
		return sendResult{}, errInvalidMessageContents()
	}
	attrSize, err := checkAttributes(e.attrs)
	if err != nil {
		return sendResult{}, err
	}
	if size := len(*e.body) + attrSize; size > q.maxSize {
		return sendResult{}, invalidParameter("One or more parameters are invalid. Reason: Message must be shorter than %d bytes (it is %d).", q.maxSize, size)
	}
	if e.delay < 0 || e.delay > 900 {
		return sendResult{}, invalidParameter("Value %d for parameter DelaySeconds is invalid. Reason: must be between 0 and 900, if provided.", e.delay)
	}
	var trace string
	for k, v := range e.sysAttr {
		if k != "AWSTraceHeader" || aws.ToString(v.DataType) != "String" || v.StringValue == nil {
			return sendResult{}, invalidParameter("Message system attribute %s is invalid: only AWSTraceHeader of type String is supported.", k)
		}
		trace = *v.StringValue
	}
	m := &message{
		id:       f.newID(),
		body:     *e.body,
		attrs:    e.attrs,
		md5Body:  md5Hex([]byte(*e.body)),
		md5Attrs: md5OfAttributes(e.attrs),
		trace:    trace,
		sent:     now,
		groupID:  aws.ToString(e.groupID),
	}
	delay := q.delay
	if e.delay > 0 {
		delay = time.Duration(e.delay) * time.Second
	}
	if q.fifo {
		if e.delay != 0 {
			return sendResult{}, invalidParameter("Value %d for parameter DelaySeconds is invalid. Reason: The request include parameter that is not valid for this queue type.", e.delay)
		}
		if m.groupID == "" {
			return sendResult{}, missingParameter("MessageGroupId")
		}
		m.dedupID = aws.ToString(e.dedupID)
		if m.dedupID == "" {
			if !q.contentDedup {
				return sendResult{}, invalidParameter("The queue should either have ContentBasedDeduplication enabled or MessageDeduplicationId provided explicitly")
			}
			sum := sha256.Sum256([]byte(*e.body))
			m.dedupID = hex.EncodeToString(sum[:])
		}
		if rec, ok := q.dedup[m.dedupID]; ok && now.Before(rec.until) {
			return sendResult{id: rec.messageID, md5Body: m.md5Body, md5Attrs: m.md5Attrs, seq: rec.seq}, nil
		}
		m.seq = q.nextSeq()
		q.remember(m.dedupID, dedupRec{until: now.Add(deduplicationInterval), messageID: m.id, seq: m.seq})
	} else if e.dedupID != nil {
		return sendResult{}, invalidParameter("Value %s for parameter MessageDeduplicationId is invalid. Reason: The request include parameter that is not valid for this queue type.", *e.dedupID)
	}
	m.visibleAt = now.Add(delay)
	q.add(m)
	f.notifyLocked()
	return sendResult{id: m.id, md5Body: m.md5Body, md5Attrs: m.md5Attrs, seq: m.seq}, nil
}

func nonEmpty(s string) *string {
	if s == "" {
		return nil
	}
	return aws.String(s)
}

// SendMessage stores a message.
func (f *Fake) SendMessage(ctx context.Context, params *sqs.SendMessageInput, optFns ...func(*sqs.Options)) (res *sqs.SendMessageOutput, rerr error) {
	const op = "SendMessage"
	c, q, err := f.enter(ctx, op, params.QueueUrl)
	if err != nil {
		return nil, err
	}
	defer settle(ctx, c, &res, &rerr)
	defer f.mu.Unlock()
	r, err := f.sendLocked(q, sendEntry{
		body: params.MessageBody, delay: params.DelaySeconds, attrs: params.MessageAttributes,
		sysAttr: params.MessageSystemAttributes, groupID: params.MessageGroupId, dedupID: params.MessageDeduplicationId,
	}, f.now())
	if err != nil {
		return nil, opError(op, err)
	}
	return &sqs.SendMessageOutput{
		MessageId: aws.String(r.id), MD5OfMessageBody: aws.String(r.md5Body),
		MD5OfMessageAttributes: nonEmpty(r.md5Attrs), SequenceNumber: nonEmpty(r.seq),
	}, nil
}

// SendMessageBatch stores up to ten messages, reporting each entry's result.
func (f *Fake) SendMessageBatch(ctx context.Context, params *sqs.SendMessageBatchInput, optFns ...func(*sqs.Options)) (res *sqs.SendMessageBatchOutput, rerr error) {
	const op = "SendMessageBatch"
	c, err := f.begin(ctx, op)
	if err != nil {
		return nil, err
	}
	defer settle(ctx, c, &res, &rerr)
	ids := make([]string, len(params.Entries))
	total := 0
	for i, e := range params.Entries {
		ids[i] = aws.ToString(e.Id)
		total += len(aws.ToString(e.MessageBody))
		n, _ := checkAttributes(e.MessageAttributes)
		total += n
	}
	if err := checkBatch(ids); err != nil {
		return nil, opError(op, err)
	}
	if total > maxMessageSizeLimit {
		return nil, opError(op, errBatchTooLong(total, maxMessageSizeLimit))
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	q, err := f.lookup(op, params.QueueUrl)
	if err != nil {
		return nil, err
	}
	now := f.now()
	out := &sqs.SendMessageBatchOutput{Successful: []types.SendMessageBatchResultEntry{}, Failed: []types.BatchResultErrorEntry{}}
	for _, e := range params.Entries {
		if c.failEntry(e.Id, &out.Failed) {
			continue
		}
		r, err := f.sendLocked(q, sendEntry{
			body: e.MessageBody, delay: e.DelaySeconds, attrs: e.MessageAttributes,
			sysAttr: e.MessageSystemAttributes, groupID: e.MessageGroupId, dedupID: e.MessageDeduplicationId,
		}, now)
		if err != nil {
			out.Failed = append(out.Failed, batchEntryError(aws.ToString(e.Id), err))
			continue
		}
		out.Successful = append(out.Successful, types.SendMessageBatchResultEntry{
			Id: e.Id, MessageId: aws.String(r.id), MD5OfMessageBody: aws.String(r.md5Body),
			MD5OfMessageAttributes: nonEmpty(r.md5Attrs), SequenceNumber: nonEmpty(r.seq),
		})
	}
	return out, nil
}

// ReceiveMessage returns up to MaxNumberOfMessages visible messages and
// hides them for the visibility timeout. With a wait time (the call's
// WaitTimeSeconds, else the queue's ReceiveMessageWaitTimeSeconds) it long
// polls: it returns as soon as at least one message can be returned, or
// empty when the wait ends. A message already received maxReceiveCount
// times is moved to the dead-letter queue instead of being returned.
func (f *Fake) ReceiveMessage(ctx context.Context, params *sqs.ReceiveMessageInput, optFns ...func(*sqs.Options)) (res *sqs.ReceiveMessageOutput, rerr error) {
	const op = "ReceiveMessage"
	c, err := f.begin(ctx, op)
	if err != nil {
		return nil, err
	}
	defer settle(ctx, c, &res, &rerr)
	max := int(params.MaxNumberOfMessages)
	if max == 0 {
		max = 1
	}
	if max < 1 || max > sqslimit.MaxBatchEntries {
		return nil, opError(op, invalidParameter("Value %d for parameter MaxNumberOfMessages is invalid. Reason: Must be between 1 and 10, if provided.", params.MaxNumberOfMessages))
	}
	if params.WaitTimeSeconds < 0 || params.WaitTimeSeconds > 20 {
		return nil, opError(op, invalidParameter("Value %d for parameter WaitTimeSeconds is invalid. Reason: Must be >= 0 and <= 20, if provided.", params.WaitTimeSeconds))
	}
	if params.VisibilityTimeout < 0 || params.VisibilityTimeout > 43200 {
		return nil, opError(op, invalidParameter("Value %d for parameter VisibilityTimeout is invalid. Reason: Must be >= 0 and <= 43200, if provided.", params.VisibilityTimeout))
	}
	want := wantedSysAttrs(params)

	f.mu.Lock()
	q, err := f.lookup(op, params.QueueUrl)
	if err != nil {
		f.mu.Unlock()
		return nil, err
	}
	wait := q.receiveWait
	if params.WaitTimeSeconds > 0 {
		wait = time.Duration(params.WaitTimeSeconds) * time.Second
	}
	f.mu.Unlock()
	deadline := time.Now().Add(wait)

	for {
		f.mu.Lock()
		q, err := f.lookup(op, params.QueueUrl)
		if err != nil {
			f.mu.Unlock()
			return nil, err
		}
		vis := q.visibility
		if params.VisibilityTimeout > 0 {
			vis = time.Duration(params.VisibilityTimeout) * time.Second
		}
		now := f.now()
		got := f.receiveLocked(q, max, vis, now)
		remaining := time.Until(deadline)
		if len(got) > 0 || remaining <= 0 {
			out := &sqs.ReceiveMessageOutput{Messages: make([]types.Message, len(got))}
			// The messages' strings, each its own: one allocation per call.
			strs := make([]string, 4*len(got))
			for i, m := range got {
				attrs := selectAttributes(m.attrs, params.MessageAttributeNames)
				s := strs[4*i : 4*i+4 : 4*i+4]
				s[0], s[1], s[2], s[3] = m.id, m.handle, m.body, m.md5Body
				out.Messages[i] = types.Message{
					MessageId:              &s[0],
					ReceiptHandle:          &s[1],
					Body:                   &s[2],
					MD5OfBody:              &s[3],
					MessageAttributes:      attrs,
					MD5OfMessageAttributes: nonEmpty(md5OfAttributes(attrs)),
					Attributes:             f.systemAttributes(m, want),
				}
			}
			f.mu.Unlock()
			return out, nil
		}
		if next := q.nextVisible(now); next > 0 && next < remaining {
			remaining = next
		}
		if f.runningTasksLocked() && remaining > moveTaskPoll {
			remaining = moveTaskPoll // move tasks progress with time, not events
		}
		changed := f.changed
		f.mu.Unlock()

		t := time.NewTimer(remaining)
		select {
		case <-changed:
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return nil, opError(op, contextErr(ctx))
		}
		t.Stop()
	}
}

// nextVisible returns how long until the earliest hidden message becomes
// visible, or 0 when none is hidden.
func (q *queue) nextVisible(now time.Time) time.Duration {
	var next time.Duration
	for _, m := range q.msgs {
		if d := m.visibleAt.Sub(now); d > 0 && (next == 0 || d < next) {
			next = d
		}
	}
	return next
}

// receiveLocked picks up to max receivable messages, marks them received,
// and moves messages past maxReceiveCount to the dead-letter queue.
func (f *Fake) receiveLocked(q *queue, max int, vis time.Duration, now time.Time) []*message {
	q.expireLocked(now)
	f.advanceTasksLocked(now)
	// FIFO: a group with a message in flight, or whose next message is not
	// yet visible, gives nothing until that message is done.
	blocked := map[string]bool{}
	if q.fifo {
		for _, m := range q.msgs {
			m.settle(now)
			if m.state(now) == stateInflight {
				blocked[m.groupID] = true
			}
		}
	}
	var got, dead []*message
	for _, m := range q.msgs {
		if len(got) == max {
			break
		}
		m.settle(now)
		if q.fifo && blocked[m.groupID] {
			continue
		}
		if m.state(now) != stateVisible {
			if q.fifo {
				blocked[m.groupID] = true
			}
			continue
		}
		if q.redrive != nil && m.receives >= q.redrive.maxReceiveCount {
			if _, ok := f.byArn[q.redrive.targetARN]; ok {
				dead = append(dead, m)
				continue
			}
		}
		m.receives++
		if m.firstReceive.IsZero() {
			m.firstReceive = now
		}
		m.receivedAt = now
		m.handle = makeHandle(q.name, m.id)
		m.inflight = true
		m.visibleAt = now.Add(vis)
		got = append(got, m)
	}
	for _, m := range dead {
		q.remove(m)
		f.deadLetterLocked(q, f.byArn[q.redrive.targetARN], m, now)
	}
	return got
}

// deadLetterLocked moves m from src to dlq as SQS's redrive does: same
// message ID, body and attributes; visible at once. A standard dead-letter
// queue keeps the enqueue time (SentTimestamp, which retention counts
// from); a FIFO one resets it to the move, as SQS does.
func (f *Fake) deadLetterLocked(src, dlq *queue, m *message, now time.Time) {
	m.inflight = false
	m.handle = ""
	m.visibleAt = now
	m.dlqSource = src.arn
	if dlq.fifo {
		m.seq = dlq.nextSeq()
		m.sent = now
	}
	dlq.add(m)
	f.notifyLocked()
}

// findLocked resolves a receipt handle to its queue's message. It returns
// ReceiptHandleIsInvalid for a handle SQS could not have issued for q, and
// a nil message (no error) when the message is gone.
func findLocked(q *queue, handle string) (*message, error) {
	var buf [192]byte
	name, id, ok := parseHandle(handle, buf[:])
	if !ok || string(name) != q.name {
		return nil, errReceiptHandleIsInvalid(handle)
	}
	return q.byID[string(id)], nil
}

// deleteLocked deletes the message a receipt handle names. As in SQS,
// deleting a message that is already gone succeeds, and a handle from an
// earlier receive (the message was received again since) succeeds without
// deleting.
func (f *Fake) deleteLocked(q *queue, handle string) error {
	if handle == "" {
		return missingParameter("ReceiptHandle")
	}
	m, err := findLocked(q, handle)
	if err != nil || m == nil {
		return err
	}
	if m.handle == handle {
		q.markRemoved(m) // the calling API compacts
		if q.fifo {
			f.notifyLocked() // the group may be unlocked: waiting long polls look again
		}
	}
	return nil
}

// DeleteMessage deletes the message a receipt handle names.
func (f *Fake) DeleteMessage(ctx context.Context, params *sqs.DeleteMessageInput, optFns ...func(*sqs.Options)) (res *sqs.DeleteMessageOutput, rerr error) {
	const op = "DeleteMessage"
	c, q, err := f.enter(ctx, op, params.QueueUrl)
	if err != nil {
		return nil, err
	}
	defer settle(ctx, c, &res, &rerr)
	defer f.mu.Unlock()
	err = f.deleteLocked(q, aws.ToString(params.ReceiptHandle))
	q.compact()
	if err != nil {
		return nil, opError(op, err)
	}
	return &sqs.DeleteMessageOutput{}, nil
}

// DeleteMessageBatch deletes up to ten messages, reporting each entry.
func (f *Fake) DeleteMessageBatch(ctx context.Context, params *sqs.DeleteMessageBatchInput, optFns ...func(*sqs.Options)) (res *sqs.DeleteMessageBatchOutput, rerr error) {
	const op = "DeleteMessageBatch"
	c, q, err := f.enterBatch(ctx, op, params.QueueUrl, len(params.Entries), func(i int) *string { return params.Entries[i].Id })
	if err != nil {
		return nil, err
	}
	defer settle(ctx, c, &res, &rerr)
	defer f.mu.Unlock()
	out := &sqs.DeleteMessageBatchOutput{Successful: make([]types.DeleteMessageBatchResultEntry, 0, len(params.Entries)), Failed: []types.BatchResultErrorEntry{}}
	for _, e := range params.Entries {
		if c.failEntry(e.Id, &out.Failed) {
			continue
		}
		if err := f.deleteLocked(q, aws.ToString(e.ReceiptHandle)); err != nil {
			out.Failed = append(out.Failed, batchEntryError(aws.ToString(e.Id), err))
			continue
		}
		out.Successful = append(out.Successful, types.DeleteMessageBatchResultEntry{Id: e.Id})
	}
	q.compact()
	return out, nil
}

// changeLocked sets the visibility timeout of the message a handle names,
// counted from now and capped at 12 hours from the receive.
func (f *Fake) changeLocked(q *queue, handle string, timeout int32, now time.Time) error {
	if handle == "" {
		return missingParameter("ReceiptHandle")
	}
	if timeout < 0 || timeout > 43200 {
		return invalidParameter("Value %d for parameter VisibilityTimeout is invalid. Reason: Must be >= 0 and <= 43200.", timeout)
	}
	m, err := findLocked(q, handle)
	if err != nil {
		return err
	}
	if m == nil || m.handle != handle {
		return invalidParameter("Value %s for parameter ReceiptHandle is invalid. Reason: Message does not exist or is not available for visibility timeout change.", handle)
	}
	// As in SQS, the latest receive's handle still works after its
	// visibility timeout ended, as long as nobody received the message since:
	// the message is hidden again.
	d := time.Duration(timeout) * time.Second
	if now.Add(d).Sub(m.receivedAt) > sqslimit.MaxVisibility {
		return invalidParameter("Value %d for parameter VisibilityTimeout is invalid. Reason: Total VisibilityTimeout for the message is beyond the limit [43200 seconds]", timeout)
	}
	m.visibleAt = now.Add(d)
	m.inflight = d > 0
	f.notifyLocked() // waiting long polls recompute when to wake
	return nil
}

// ChangeMessageVisibility changes one in-flight message's visibility timeout.
func (f *Fake) ChangeMessageVisibility(ctx context.Context, params *sqs.ChangeMessageVisibilityInput, optFns ...func(*sqs.Options)) (res *sqs.ChangeMessageVisibilityOutput, rerr error) {
	const op = "ChangeMessageVisibility"
	c, q, err := f.enter(ctx, op, params.QueueUrl)
	if err != nil {
		return nil, err
	}
	defer settle(ctx, c, &res, &rerr)
	defer f.mu.Unlock()
	if err := f.changeLocked(q, aws.ToString(params.ReceiptHandle), params.VisibilityTimeout, f.now()); err != nil {
		return nil, opError(op, err)
	}
	return &sqs.ChangeMessageVisibilityOutput{}, nil
}

// ChangeMessageVisibilityBatch changes up to ten messages' visibility
// timeouts, reporting each entry.
func (f *Fake) ChangeMessageVisibilityBatch(ctx context.Context, params *sqs.ChangeMessageVisibilityBatchInput, optFns ...func(*sqs.Options)) (res *sqs.ChangeMessageVisibilityBatchOutput, rerr error) {
	const op = "ChangeMessageVisibilityBatch"
	c, q, err := f.enterBatch(ctx, op, params.QueueUrl, len(params.Entries), func(i int) *string { return params.Entries[i].Id })
	if err != nil {
		return nil, err
	}
	defer settle(ctx, c, &res, &rerr)
	defer f.mu.Unlock()
	now := f.now()
	out := &sqs.ChangeMessageVisibilityBatchOutput{Successful: []types.ChangeMessageVisibilityBatchResultEntry{}, Failed: []types.BatchResultErrorEntry{}}
	for _, e := range params.Entries {
		if c.failEntry(e.Id, &out.Failed) {
			continue
		}
		if err := f.changeLocked(q, aws.ToString(e.ReceiptHandle), e.VisibilityTimeout, now); err != nil {
			out.Failed = append(out.Failed, batchEntryError(aws.ToString(e.Id), err))
			continue
		}
		out.Successful = append(out.Successful, types.ChangeMessageVisibilityBatchResultEntry{Id: e.Id})
	}
	return out, nil
}

func contextErr(ctx context.Context) error {
	return &smithy.CanceledError{Err: ctx.Err()}
}

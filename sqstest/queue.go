package sqstest

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
)

// Limits of SQS that the Fake enforces (with those of package sqslimit:
// batch entries, message attributes).
const (
	// deduplicationInterval is how long a FIFO queue remembers a
	// deduplication ID.
	deduplicationInterval = 5 * time.Minute
	// purgeInterval is how long after a PurgeQueue another is refused.
	purgeInterval = 60 * time.Second
	// maxMessageSizeLimit is the largest message (and batch) SQS takes: 1 MiB
	// since August 2025, also the default MaximumMessageSize of a new queue.
	maxMessageSizeLimit = 1 << 20
)

var queueNameRE = regexp.MustCompile(`^[A-Za-z0-9_-]{1,80}$`)

// redrive is a parsed RedrivePolicy.
type redrive struct {
	targetARN       string
	maxReceiveCount int
}

// queue is one queue's state. Every field is guarded by Fake.mu.
type queue struct {
	name, url, arn string
	created        time.Time
	modified       time.Time

	visibility   time.Duration
	retention    time.Duration
	delay        time.Duration
	maxSize      int
	receiveWait  time.Duration
	fifo         bool
	contentDedup bool
	redrive      *redrive
	extra        map[string]string // other settable attributes, kept verbatim

	msgs      []*message          // in arrival order
	byID      map[string]*message // msgs by ID
	dedup     map[string]dedupRec // FIFO deduplication IDs seen
	seq       uint64              // FIFO sequence numbers
	lastPurge time.Time

	// Bounds that spare scans of every message on every call: no message
	// was sent before oldest, and no deduplication ID expires before
	// dedupNext.
	oldest, dedupNext time.Time
	removed           int // messages marked removed, still in msgs until compact
}

type dedupRec struct {
	until     time.Time
	messageID string
	seq       string
}

// settable lists the attributes SetQueueAttributes and CreateQueue accept.
var settable = map[string]bool{
	"DelaySeconds": true, "MaximumMessageSize": true, "MessageRetentionPeriod": true,
	"ReceiveMessageWaitTimeSeconds": true, "VisibilityTimeout": true, "RedrivePolicy": true,
	"RedriveAllowPolicy": true, "FifoQueue": true, "ContentBasedDeduplication": true,
	"Policy": true, "KmsMasterKeyId": true, "KmsDataKeyReusePeriodSeconds": true,
	"SqsManagedSseEnabled": true, "DeduplicationScope": true, "FifoThroughputLimit": true,
}

func newQueue(name, url, arn string, now time.Time) *queue {
	return &queue{
		name: name, url: url, arn: arn, created: now, modified: now,
		visibility: 30 * time.Second,
		retention:  4 * 24 * time.Hour,
		maxSize:    maxMessageSizeLimit,
		extra:      map[string]string{},
		dedup:      map[string]dedupRec{},
	}
}

// secondsAttr parses a whole number of seconds within [lo, hi].
func secondsAttr(name, v string, lo, hi int) (time.Duration, error) {
	n, err := strconv.Atoi(v)
	if err != nil || n < lo || n > hi {
		return 0, invalidAttributeValue(name, fmt.Sprintf("must be an integer from %d to %d, got %q", lo, hi, v))
	}
	return time.Duration(n) * time.Second, nil
}

func boolAttr(name, v string) (bool, error) {
	switch strings.ToLower(v) {
	case "true":
		return true, nil
	case "false":
		return false, nil
	}
	return false, invalidAttributeValue(name, fmt.Sprintf("must be true or false, got %q", v))
}

// parseRedrive validates a RedrivePolicy against the queues that exist.
func (f *Fake) parseRedrive(q *queue, v string) (*redrive, error) {
	if v == "" {
		return nil, nil
	}
	var raw map[string]any
	if err := json.Unmarshal([]byte(v), &raw); err != nil {
		return nil, invalidParameter("Value %s for parameter RedrivePolicy is invalid. Reason: Redrive policy is not a valid JSON map.", v)
	}
	target, _ := raw["deadLetterTargetArn"].(string)
	if target == "" {
		return nil, invalidParameter("Value %s for parameter RedrivePolicy is invalid. Reason: Redrive policy does not contain mandatory attribute: deadLetterTargetArn.", v)
	}
	var count int
	switch c := raw["maxReceiveCount"].(type) {
	case float64:
		count = int(c)
		if float64(count) != c {
			count = 0
		}
	case string:
		count, _ = strconv.Atoi(c)
	case nil:
		return nil, invalidParameter("Value %s for parameter RedrivePolicy is invalid. Reason: Redrive policy does not contain mandatory attribute: maxReceiveCount.", v)
	}
	if count < 1 || count > 1000 {
		return nil, invalidParameter("Value %s for parameter RedrivePolicy is invalid. Reason: Invalid value for maxReceiveCount: %v, valid values are from 1 to 1000 both inclusive.", v, raw["maxReceiveCount"])
	}
	dlq, ok := f.byArn[target]
	if !ok {
		return nil, invalidParameter("Value %s for parameter RedrivePolicy is invalid. Reason: Dead letter target does not exist.", v)
	}
	if dlq.fifo != q.fifo {
		return nil, invalidParameter("Value %s for parameter RedrivePolicy is invalid. Reason: Dead-letter queue must be same type of queue as the source.", v)
	}
	return &redrive{targetARN: target, maxReceiveCount: count}, nil
}

// setAttributes validates and applies attrs; on error nothing changes.
// creating allows FifoQueue to be set.
func (f *Fake) setAttributes(q *queue, attrs map[string]string, creating bool) error {
	next := *q
	next.extra = make(map[string]string, len(q.extra))
	for k, v := range q.extra {
		next.extra[k] = v
	}
	// FifoQueue first: other checks depend on it.
	if v, ok := attrs["FifoQueue"]; ok {
		fifo, err := boolAttr("FifoQueue", v)
		if err != nil {
			return err
		}
		if !creating && fifo != q.fifo {
			return invalidAttributeName("FifoQueue")
		}
		next.fifo = fifo
	}
	for name, v := range attrs {
		if !settable[name] {
			return invalidAttributeName(name)
		}
		var err error
		switch name {
		case "FifoQueue":
		case "DelaySeconds":
			next.delay, err = secondsAttr(name, v, 0, 900)
		case "MaximumMessageSize":
			var n int
			n, err = strconv.Atoi(v)
			if err != nil || n < 1024 || n > maxMessageSizeLimit {
				err = invalidAttributeValue(name, fmt.Sprintf("must be an integer from 1024 to %d, got %q", maxMessageSizeLimit, v))
			}
			next.maxSize = n
		case "MessageRetentionPeriod":
			next.retention, err = secondsAttr(name, v, 60, 1209600)
		case "ReceiveMessageWaitTimeSeconds":
			next.receiveWait, err = secondsAttr(name, v, 0, 20)
		case "VisibilityTimeout":
			next.visibility, err = secondsAttr(name, v, 0, 43200)
		case "ContentBasedDeduplication":
			next.contentDedup, err = boolAttr(name, v)
			if err == nil && !next.fifo {
				err = invalidAttributeName(name)
			}
		case "RedrivePolicy":
			next.redrive, err = f.parseRedrive(&next, v)
		case "DeduplicationScope", "FifoThroughputLimit":
			if !next.fifo {
				err = invalidAttributeName(name)
			}
			next.extra[name] = v
		default:
			next.extra[name] = v
		}
		if err != nil {
			return err
		}
	}
	*q = next
	return nil
}

// attribute returns one attribute's current value and whether it exists.
func (f *Fake) attribute(q *queue, name string) (string, bool) {
	secs := func(d time.Duration) string { return strconv.Itoa(int(d / time.Second)) }
	switch name {
	case "QueueArn":
		return q.arn, true
	case "VisibilityTimeout":
		return secs(q.visibility), true
	case "MessageRetentionPeriod":
		return secs(q.retention), true
	case "DelaySeconds":
		return secs(q.delay), true
	case "MaximumMessageSize":
		return strconv.Itoa(q.maxSize), true
	case "ReceiveMessageWaitTimeSeconds":
		return secs(q.receiveWait), true
	case "CreatedTimestamp":
		return strconv.FormatInt(q.created.Unix(), 10), true
	case "LastModifiedTimestamp":
		return strconv.FormatInt(q.modified.Unix(), 10), true
	case "RedrivePolicy":
		if q.redrive == nil {
			return "", false
		}
		return fmt.Sprintf(`{"deadLetterTargetArn":"%s","maxReceiveCount":%d}`, q.redrive.targetARN, q.redrive.maxReceiveCount), true
	case "FifoQueue":
		if !q.fifo {
			return "", false
		}
		return "true", true
	case "ContentBasedDeduplication":
		if !q.fifo {
			return "", false
		}
		return strconv.FormatBool(q.contentDedup), true
	case "ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible", "ApproximateNumberOfMessagesDelayed":
		now := f.now()
		var visible, inflight, delayed int
		for _, m := range q.msgs {
			switch m.state(now) {
			case stateVisible:
				visible++
			case stateInflight:
				inflight++
			case stateDelayed:
				delayed++
			}
		}
		n := map[string]int{"ApproximateNumberOfMessages": visible, "ApproximateNumberOfMessagesNotVisible": inflight, "ApproximateNumberOfMessagesDelayed": delayed}[name]
		return strconv.Itoa(n), true
	case "SqsManagedSseEnabled":
		if v, ok := q.extra[name]; ok {
			return v, true
		}
		return "true", true
	}
	v, ok := q.extra[name]
	return v, ok
}

// allAttributeNames lists what "All" returns.
var allAttributeNames = []string{
	"QueueArn", "ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible",
	"ApproximateNumberOfMessagesDelayed", "CreatedTimestamp", "LastModifiedTimestamp",
	"VisibilityTimeout", "MaximumMessageSize", "MessageRetentionPeriod", "DelaySeconds",
	"ReceiveMessageWaitTimeSeconds", "RedrivePolicy", "RedriveAllowPolicy", "Policy",
	"FifoQueue", "ContentBasedDeduplication", "DeduplicationScope", "FifoThroughputLimit",
	"KmsMasterKeyId", "KmsDataKeyReusePeriodSeconds", "SqsManagedSseEnabled",
}

var knownAttribute = func() map[string]bool {
	m := map[string]bool{}
	for _, n := range allAttributeNames {
		m[n] = true
	}
	return m
}()

// expireLocked drops messages past the queue's retention period, and
// deduplication IDs past their interval. It looks at every message only
// when one may have expired.
func (q *queue) expireLocked(now time.Time) {
	if len(q.msgs) > 0 && now.Sub(q.oldest) >= q.retention {
		kept := q.msgs[:0]
		q.oldest = now
		for _, m := range q.msgs {
			if now.Sub(m.sent) < q.retention {
				kept = append(kept, m)
				if m.sent.Before(q.oldest) {
					q.oldest = m.sent
				}
			} else {
				delete(q.byID, m.id)
			}
		}
		for i := len(kept); i < len(q.msgs); i++ {
			q.msgs[i] = nil
		}
		q.msgs = kept
	}
	if len(q.dedup) > 0 && !now.Before(q.dedupNext) {
		q.dedupNext = time.Time{}
		for id, rec := range q.dedup {
			if !now.Before(rec.until) {
				delete(q.dedup, id)
			} else if q.dedupNext.IsZero() || rec.until.Before(q.dedupNext) {
				q.dedupNext = rec.until
			}
		}
	}
}

// remember records a deduplication ID until its interval ends.
func (q *queue) remember(id string, rec dedupRec) {
	if len(q.dedup) == 0 || rec.until.Before(q.dedupNext) {
		q.dedupNext = rec.until
	}
	q.dedup[id] = rec
}

// add appends m to the queue.
func (q *queue) add(m *message) {
	if q.byID == nil {
		q.byID = map[string]*message{}
	}
	if len(q.msgs) == 0 || m.sent.Before(q.oldest) {
		q.oldest = m.sent
	}
	m.removed = false // a message dead-lettered from another queue
	q.msgs = append(q.msgs, m)
	q.byID[m.id] = m
}

// clearMessages empties the queue.
func (q *queue) clearMessages() {
	clear(q.msgs)
	q.msgs = q.msgs[:0]
	clear(q.byID)
	q.removed = 0
}

// remove deletes m from the queue.
func (q *queue) remove(m *message) {
	q.markRemoved(m)
	q.compact()
}

// markRemoved takes m out of the queue's index; compact takes it out of
// msgs. A call that removes several messages compacts once, at its end.
func (q *queue) markRemoved(m *message) {
	if q.byID[m.id] != m {
		return
	}
	delete(q.byID, m.id)
	m.removed = true
	q.removed++
}

// compact drops the messages marked removed from msgs, keeping the order.
// Deleted messages are mostly the oldest, so it looks at messages only
// until it has found every removed one, and moves only the survivors among
// those (toward the end of that stretch) before dropping its front: the
// cost follows how far the removed messages reach, not the queue's length.
func (q *queue) compact() {
	if q.removed == 0 {
		return
	}
	i := 0
	for left := q.removed; i < len(q.msgs) && left > 0; i++ {
		if q.msgs[i].removed {
			left--
		}
	}
	w := i
	for k := i - 1; k >= 0; k-- {
		if m := q.msgs[k]; !m.removed {
			w--
			q.msgs[w] = m
		}
	}
	clear(q.msgs[:w])
	q.msgs = q.msgs[w:]
	q.removed = 0
}

// attrNamesToStrings turns the deprecated AttributeNames field into names.
func attrNamesToStrings(names []types.QueueAttributeName) []string {
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = string(n)
	}
	return out
}

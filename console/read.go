package console

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/sqsworker/sqsworker/dlq"
	"github.com/sqsworker/sqsworker/queueref"
)

// snapshot is one read of a dead-letter queue: what the triage page groups
// and the message page shows.
type snapshot struct {
	QueueURL string
	ReadAt   time.Time     // when the read began
	Took     time.Duration // until every message was released again
	Hold     time.Duration // the longest the messages could stay hidden
	Counts   dlq.Counts    // the queue's counts before the read
	Messages []dlq.Message
	// Sampled reports that the queue held more than MaxRead messages, so
	// the groups come from a sample of that size.
	Sampled bool
	// NotSeen is how many messages (visible or in flight at the start) the
	// read went through the queue without seeing.
	NotSeen int
	// Err is the read's failure, if any (the messages read are still shown).
	Err error
	// bytes is the messages' estimated size (keep).
	bytes int
}

// read reads the dead-letter queue at url with parallel dlq.Inspect calls,
// stores the snapshot and returns it.
//
// One Inspect receives ten messages per call, so a 10,000-message queue
// takes 1,000 receives and 1,000 releases one after the other; at 15 ms per
// call that is 30 seconds. The console runs Options.Readers Inspects at
// once instead. Each ends at its first empty receive, when every visible
// message is held by one of them; but each would also release its own
// messages as it ends, and the others, still receiving, would then see
// them again. So every reader's release waits until all of them have
// finished receiving (barrier below): the messages stay hidden until the
// read is complete, then all readers release theirs in parallel. A message
// is seen once, the count check is done once on the union, and the hold
// lasts as long as the read, no longer.
//
// Two page views of one queue at once share one read: a second read would
// find the first one's messages hidden.
func (h *handler) read(ctx context.Context, url string) *snapshot {
	h.mu.Lock()
	if r, ok := h.reading[url]; ok {
		h.mu.Unlock()
		select {
		case <-r.done:
			return r.snap
		case <-ctx.Done():
			return &snapshot{QueueURL: url, ReadAt: h.opts.Now(), Hold: h.opts.Hold, Err: context.Cause(ctx)}
		}
	}
	r := &readInFlight{done: make(chan struct{})}
	h.reading[url] = r
	h.mu.Unlock()
	s := &snapshot{QueueURL: url, ReadAt: h.opts.Now(), Hold: h.opts.Hold}
	start := time.Now()
	defer func() {
		s.Took = time.Since(start)
		h.mu.Lock()
		h.keep(url, s)
		delete(h.reading, url)
		h.mu.Unlock()
		r.snap = s
		close(r.done)
	}()
	counts, err := dlq.Count(ctx, h.client, url)
	if err != nil {
		s.Err = err
		return s
	}
	s.Counts = counts
	n := h.opts.Readers
	// Each reader's share is a whole number of receives: Inspect keeps a
	// receive's messages beyond its Max hidden, then releases them, without
	// returning them.
	perReader := ((h.opts.MaxRead+n-1)/n + 9) / 10 * 10
	var (
		wg      sync.WaitGroup
		barrier sync.WaitGroup
		mu      sync.Mutex
		seen    = map[string]bool{}
		errs    []error
	)
	barrier.Add(n)
	for range n {
		wg.Go(func() {
			c := &barrierClient{API: h.client, barrier: &barrier}
			msgs, err := dlq.Inspect(ctx, c, url, dlq.InspectOptions{Max: perReader, Hold: h.opts.Hold})
			c.arrive() // a reader that received nothing never releases
			mu.Lock()
			defer mu.Unlock()
			for _, m := range msgs {
				if !seen[m.ID] {
					seen[m.ID] = true
					s.Messages = append(s.Messages, m)
				}
			}
			// Each reader sees only its share: the count is checked on the
			// union below.
			if err != nil && !errors.Is(err, dlq.ErrNotAllSeen) {
				errs = append(errs, err)
			}
		})
	}
	wg.Wait()
	if len(s.Messages) > h.opts.MaxRead {
		s.Messages = s.Messages[:h.opts.MaxRead]
	}
	s.Err = errors.Join(errs...)
	expected := counts.Visible + counts.InFlight
	switch {
	case expected > h.opts.MaxRead:
		s.Sampled = true
	case len(s.Messages) < expected && s.Err == nil:
		s.NotSeen = expected - len(s.Messages)
	}
	slices.SortFunc(s.Messages, func(a, b dlq.Message) int { return a.FailedAt().Compare(b.FailedAt()) })
	return s
}

// readInFlight is a read under way, for page views that arrive meanwhile.
type readInFlight struct {
	done chan struct{}
	snap *snapshot // set before done is closed
}

// barrierClient is one reader's client: its first release
// (ChangeMessageVisibilityBatch, which dlq.Inspect calls only at its end)
// marks it done receiving and waits until every reader is.
type barrierClient struct {
	dlq.API
	barrier *sync.WaitGroup
	once    sync.Once
}

func (c *barrierClient) arrive() { c.once.Do(c.barrier.Done) }

func (c *barrierClient) ChangeMessageVisibilityBatch(ctx context.Context, in *sqs.ChangeMessageVisibilityBatchInput, o ...func(*sqs.Options)) (*sqs.ChangeMessageVisibilityBatchOutput, error) {
	c.arrive()
	c.barrier.Wait()
	return c.API.ChangeMessageVisibilityBatch(ctx, in, o...)
}

// snapshotOf returns the last read of the queue at url if it is kept
// (keep: younger than keepFor, not dropped by an action), or nil.
func (h *handler) snapshotOf(url string) *snapshot {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.sweep()
	return h.snapshots[url]
}

// group is the dead-lettered messages that failed for one reason: the same
// source queue, handler and error.
type group struct {
	Key      string
	Reason   string // the error, or why there is none
	Source   string // the source queue's name
	Handler  string
	Count    int
	First    time.Time // the earliest failure
	Last     time.Time // the latest failure
	MinTries int       // attempts (provenance) or receives (SQS's redrive)
	MaxTries int
	// Receives reports that Min/MaxTries are SQS receive counts (no
	// provenance), which include the console's own reads.
	Receives bool
	Sample   dlq.Message
	Messages []dlq.Message
}

// The reasons shown for messages without provenance: SQS's own redrive
// moved it (it sets DeadLetterQueueSourceArn on the messages it moves), or
// something sent it to the dead-letter queue directly.
const (
	noProvenanceRedrive = "no provenance: SQS moved it after maxReceiveCount receives (the handler's error is not known)"
	noProvenanceSent    = "no provenance: sent to the dead-letter queue directly, not moved there by SQS or by sqsworker (the reason is not known)"
)

// noProvenance returns the reason shown for m, a message without provenance.
func noProvenance(m dlq.Message) string {
	if m.DeadLetterSourceARN != "" {
		return noProvenanceRedrive
	}
	return noProvenanceSent
}

// groupKey identifies m's group. Redrive and Delete select a group with a
// Filter.Match built on it, so it must depend on the message alone.
func groupKey(m dlq.Message) string {
	reason := m.Provenance.Error
	if !m.HasProvenance {
		reason = noProvenance(m)
	}
	sum := sha256.Sum256([]byte(queueref.Name(m.Origin()) + "\x00" + m.Provenance.Handler + "\x00" + reason))
	return hex.EncodeToString(sum[:8])
}

// groups groups msgs by failure reason, the largest group first.
func groups(msgs []dlq.Message) []*group {
	byKey := map[string]*group{}
	var out []*group
	for _, m := range msgs {
		k := groupKey(m)
		g := byKey[k]
		tries, receives := m.Provenance.Attempt, !m.HasProvenance
		if receives || tries == 0 {
			tries, receives = m.ReceiveCount, true
		}
		at := m.FailedAt()
		if g == nil {
			g = &group{Key: k, Reason: m.Provenance.Error, Source: queueref.Name(m.Origin()), Handler: m.Provenance.Handler,
				First: at, Last: at, MinTries: tries, MaxTries: tries, Receives: receives, Sample: m}
			if !m.HasProvenance {
				g.Reason = noProvenance(m)
			} else if g.Reason == "" {
				g.Reason = "(no error text)"
			}
			byKey[k] = g
			out = append(out, g)
		}
		g.Count++
		g.Messages = append(g.Messages, m)
		if at.Before(g.First) {
			g.First = at
		}
		if at.After(g.Last) {
			g.Last = at
		}
		g.MinTries, g.MaxTries = min(g.MinTries, tries), max(g.MaxTries, tries)
		g.Receives = g.Receives || receives
	}
	slices.SortStableFunc(out, func(a, b *group) int {
		if c := cmp.Compare(b.Count, a.Count); c != 0 {
			return c
		}
		return a.Last.Compare(b.Last)
	})
	return out
}

// describeHold says, in words, what the read did to the queue.
func (s *snapshot) describeHold() string {
	return fmt.Sprintf("Reading %s hid them from consumers for %s (the hold is %s at most) and raised their receive count by one; all were released at once when the read ended.",
		plural(len(s.Messages), "message"), s.Took.Round(10*time.Millisecond), s.Hold)
}

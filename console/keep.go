package console

import (
	"slices"
	"time"

	"github.com/sqsworker/sqsworker/dlq"
)

// Kept reads. A read of a dead-letter queue ends by releasing every
// message it received (read), so a read the console keeps holds copies
// only: nothing stays hidden from consumers while it is kept. The search
// and message pages are served from the last read of a queue for keepFor
// after it began, so a second query over the same messages costs no SQS
// call for the messages; after that, or when asked (read again), they
// read the queue again. The reads kept hold at most keepBytes of messages
// together, the oldest dropped first; a read larger than that is not kept
// (every query then reads). An action on a queue (redrive, delete, edit
// and send, purge) drops its kept read: the messages it moved would
// otherwise still be listed. The overview's oldest failure and expiry
// warning come from a small summary of the last read, kept as long as the
// console runs (readSummary).

// keepFor is how long a read serves the search and message pages.
const keepFor = 2 * time.Minute

// keepBytes bounds the messages the kept reads hold together.
const keepBytes = 256 << 20

// readSummary is what the overview shows of a queue's last read.
type readSummary struct {
	ReadAt        time.Time
	OldestFailure time.Time // zero when the read found no message
	sent          []time.Time
}

// expiry is when the messages of the read expire from a queue whose
// retention is retention, at now.
func (rs readSummary) expiry(retention time.Duration, now time.Time) expiry {
	msgs := make([]dlq.Message, len(rs.sent))
	for i, t := range rs.sent {
		msgs[i].SentAt = t
	}
	return expiryOf(msgs, retention, now)
}

// size estimates the memory a read's messages take.
func (s *snapshot) size() int {
	n := 0
	for _, m := range s.Messages {
		n += 512 + len(m.Body) + len(m.ID)
		for k, v := range m.Attributes {
			n += 64 + len(k) + len(v.BinaryValue)
			if v.StringValue != nil {
				n += len(*v.StringValue)
			}
		}
	}
	return n
}

// keep stores s as the last read of the queue at url, and its summary.
// Called with h.mu held.
func (h *handler) keep(url string, s *snapshot) {
	rs := readSummary{ReadAt: s.ReadAt, sent: make([]time.Time, 0, len(s.Messages))}
	if len(s.Messages) > 0 {
		rs.OldestFailure = s.Messages[0].FailedAt()
	}
	for _, m := range s.Messages {
		if !m.SentAt.IsZero() {
			rs.sent = append(rs.sent, m.SentAt)
		}
	}
	if h.summaries == nil {
		h.summaries = map[string]readSummary{}
	}
	h.summaries[url] = rs
	delete(h.snapshots, url)
	s.bytes = s.size()
	if s.bytes > keepBytes {
		return
	}
	h.sweep()
	total := s.bytes
	urls := make([]string, 0, len(h.snapshots))
	for u, k := range h.snapshots {
		total += k.bytes
		urls = append(urls, u)
	}
	slices.SortFunc(urls, func(a, b string) int { return h.snapshots[a].ReadAt.Compare(h.snapshots[b].ReadAt) })
	for _, u := range urls {
		if total <= keepBytes {
			break
		}
		total -= h.snapshots[u].bytes
		delete(h.snapshots, u)
	}
	h.snapshots[url] = s
}

// sweep drops the reads older than keepFor. Called with h.mu held.
func (h *handler) sweep() {
	now := h.opts.Now()
	for u, s := range h.snapshots {
		if now.Sub(s.ReadAt) >= keepFor {
			delete(h.snapshots, u)
		}
	}
}

// forget drops the kept read of the queue at url (an action changed it).
func (h *handler) forget(url string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.snapshots, url)
}

// summaryOf returns the summary of the last read of the queue at url.
func (h *handler) summaryOf(url string) (readSummary, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	rs, ok := h.summaries[url]
	return rs, ok
}

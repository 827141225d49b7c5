package worker

import (
	"context"
	"math"
	"strconv"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/sqsworker/sqsworker/internal/awscall"
)

// signalWindow is the span of each of the two buckets the scaling signals
// (Stats.Capacity, Stats.OldestAge) are computed over: they cover the last
// one to two windows.
const signalWindow = time.Minute

// signals measures what a scaler needs from one worker: the time a handler
// slot takes per message (for Stats.Capacity) and how long fresh messages
// waited in the queue (Stats.OldestAge). It keeps the whole run's totals and
// two buckets of signalWindow each, the current one and the one before it.
type signals struct {
	mu          sync.Mutex
	runs        int64         // slot uses since Run started
	busy        time.Duration // their total time
	cur, prev   bucket
	curStart    time.Time // when cur began; zero: no bucket yet
	concurrency int
	pollers     int        // receive calls in flight at once, and settling calls of each kind
	depth       QueueDepth // the last read of the queue's depth
}

// bucket is one window's measurements.
type bucket struct {
	runs   int64
	busy   time.Duration
	oldest time.Duration // the largest age at first receipt
	// The receive and delete paths: calls and their total round trip
	// (receives that came back full; DeleteMessageBatch calls).
	receives, deletes       int64
	receiveTime, deleteTime time.Duration
}

// pathMessages is the most messages one receive or one delete call carries.
const pathMessages = 10

// fullReceive records a receive that came back with every message it
// asked for, after took.
func (s *signals) fullReceive(now time.Time, took time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.rotateLocked(now)
	s.cur.receives++
	s.cur.receiveTime += took
}

// deleteCall records a DeleteMessageBatch call that took took.
func (s *signals) deleteCall(now time.Time, took time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.rotateLocked(now)
	s.cur.deletes++
	s.cur.deleteTime += took
}

// pathBound is the most messages per second calls of one kind can carry:
// pollers calls at a time, pathMessages each, at their mean round trip;
// +Inf when none was measured.
func pathBound(pollers int, calls int64, took time.Duration) float64 {
	if calls == 0 || took <= 0 || pollers <= 0 {
		return math.Inf(1)
	}
	return float64(pollers) * pathMessages * float64(calls) / took.Seconds()
}

// rotateLocked moves the buckets on to now's window.
func (s *signals) rotateLocked(now time.Time) {
	switch {
	case s.curStart.IsZero():
		s.curStart = now
	case now.Sub(s.curStart) >= 2*signalWindow:
		s.prev, s.cur, s.curStart = bucket{}, bucket{}, now
	case now.Sub(s.curStart) >= signalWindow:
		s.prev, s.cur, s.curStart = s.cur, bucket{}, s.curStart.Add(signalWindow)
	}
}

// handled records a handler slot held for busy by one message.
func (s *signals) handled(now time.Time, busy time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.rotateLocked(now)
	s.runs++
	s.busy += busy
	s.cur.runs++
	s.cur.busy += busy
}

// received records the messages of one receive: the age of each received
// for the first time (ApproximateReceiveCount 1), from its SentTimestamp to
// its receipt. Retries are left out: their wait is the retry delay the
// policy chose, not a backlog.
func (s *signals) received(now time.Time, jobs []*job) {
	var oldest time.Duration
	for _, j := range jobs {
		if j.Msg.ReceiveCount == 1 && !j.Msg.SentAt.IsZero() {
			oldest = max(oldest, j.Msg.ReceivedAt.Sub(j.Msg.SentAt))
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.rotateLocked(now)
	s.cur.oldest = max(s.cur.oldest, oldest)
}

// fill sets the scaling fields of st at now.
func (s *signals) fill(now time.Time, st *Stats) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.rotateLocked(now)
	st.Concurrency = s.concurrency
	st.HandlerRuns, st.HandlerTime = s.runs, s.busy
	runs, busy := s.cur.runs+s.prev.runs, s.cur.busy+s.prev.busy
	if runs == 0 {
		runs, busy = s.runs, s.busy // idle lately: the whole run's mean
	}
	if runs > 0 {
		st.MeanHandlerTime = busy / time.Duration(runs)
		if busy > 0 {
			st.Capacity = float64(s.concurrency) * float64(runs) / busy.Seconds()
			// Fast handlers: the receive and delete paths are the bound.
			st.Capacity = min(st.Capacity,
				pathBound(s.pollers, s.cur.receives+s.prev.receives, s.cur.receiveTime+s.prev.receiveTime),
				pathBound(s.pollers, s.cur.deletes+s.prev.deletes, s.cur.deleteTime+s.prev.deleteTime))
		}
	}
	st.OldestAge = max(s.cur.oldest, s.prev.oldest)
	st.Backlog = s.depth
}

// sampleBacklog reads the queue's depth into the signals every
// Options.BacklogInterval, from now until ctx ends. A read that fails is
// logged (at most once per settle.WarnInterval) and tried again at the
// next tick; Stats.Backlog keeps the last good read.
func (w *Worker) sampleBacklog(ctx context.Context) {
	t := time.NewTicker(w.opts.BacklogInterval)
	defer t.Stop()
	for {
		callCtx, cancel := context.WithTimeout(ctx, w.opts.CallTimeout)
		out, err := awscall.SQS(callCtx, awscall.Rule{}, w.client.GetQueueAttributes, &sqs.GetQueueAttributesInput{
			QueueUrl: aws.String(w.queueURL),
			AttributeNames: []types.QueueAttributeName{types.QueueAttributeNameApproximateNumberOfMessages,
				types.QueueAttributeNameApproximateNumberOfMessagesNotVisible, types.QueueAttributeNameApproximateNumberOfMessagesDelayed},
		})
		cancel()
		switch {
		case err == nil:
			n := func(a types.QueueAttributeName) int64 {
				v, _ := strconv.ParseInt(out.Attributes[string(a)], 10, 64)
				return v
			}
			d := QueueDepth{Visible: n(types.QueueAttributeNameApproximateNumberOfMessages),
				InFlight: n(types.QueueAttributeNameApproximateNumberOfMessagesNotVisible),
				Delayed:  n(types.QueueAttributeNameApproximateNumberOfMessagesDelayed), At: time.Now()}
			w.signals.mu.Lock()
			w.signals.depth = d
			w.signals.mu.Unlock()
		case ctx.Err() == nil:
			w.warn.Warn("backlog", "sqsworker: reading the queue's depth failed (Options.BacklogInterval); Stats.Backlog keeps the last read", "queue", w.queueURL, "err", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

package dlq

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/sqsworker/sqsworker/internal/sqsbatch"
	"github.com/sqsworker/sqsworker/queueref"
)

// DeleteOptions configures Delete. Filter is required; every other field's
// zero value is usable.
type DeleteOptions struct {
	// Filter selects the messages to delete. The zero Filter is refused:
	// to empty a queue, use PurgeQueue.
	Filter Filter
	// Max is the most messages to delete. Zero value: no limit.
	Max int
	// Hold is how long the messages received and not deleted stay hidden
	// while Delete works; they are released at its end. Zero value: one
	// minute.
	Hold time.Duration
	// OnDelete, if set, is called for each message SQS confirmed deleted.
	OnDelete func(Message)
	// Now is the clock for Filter's age conditions. Zero value: time.Now.
	Now func() time.Time
}

// DeleteResult is what Delete did.
type DeleteResult struct {
	// Scanned is how many messages Delete received and looked at.
	Scanned int `json:"scanned"`
	// Matched is how many matched the filter.
	Matched int `json:"matched"`
	// Deleted is how many SQS confirmed deleted.
	Deleted int `json:"deleted"`
	// Failed is how many matched but could not be deleted; they stay in
	// the queue.
	Failed int `json:"failed"`
	// NotSeen is how many of the queue's messages (visible or in flight at
	// the start) Delete went through the queue without receiving; they
	// stay, and Delete returns a *NotSeenError.
	NotSeen int `json:"notSeen,omitempty"`
}

// Delete deletes the messages of queue (typically a dead-letter queue; a
// name, URL or ARN, resolved on each call with queueref.Resolve) that match
// opts.Filter, and only those: it walks the queue as Inspect
// does, deletes the matching messages with DeleteMessageBatch (failed
// entries retried as the library's other batch calls are), and releases
// every other message it received at once at the end (visibility 0).
//
// Like Inspect it never comes back short without saying so: when it went
// through the queue and received fewer messages than the queue held at the
// start, it returns a *NotSeenError (errors.Is ErrNotAllSeen) and sets
// DeleteResult.NotSeen; the messages it missed may include matching ones.
// An interrupt (ctx ends) lets the call in flight finish and releases what
// was received and not deleted.
//
// Delete needs sqs:GetQueueAttributes, sqs:ReceiveMessage,
// sqs:ChangeMessageVisibility and sqs:DeleteMessage.
func Delete(ctx context.Context, client API, queue string, opts DeleteOptions) (res DeleteResult, err error) {
	if opts.Filter.IsZero() {
		return res, fmt.Errorf("delete: refusing to delete every message of queue %s without a filter; select the messages (Filter), or empty the queue with PurgeQueue", queueref.Name(queue))
	}
	queueURL, err := queueref.Resolve(ctx, client, queue)
	if err != nil {
		return res, fmt.Errorf("delete: %w", err)
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	start, err := count(ctx, client, queueURL)
	if err != nil {
		return res, fmt.Errorf("delete: %w", err)
	}
	s := newScanner(client, queueURL, start, opts.Hold, 0)
	defer func() { err = errors.Join(err, s.releaseAll(ctx)) }()
	var failure error
	for opts.Max <= 0 || res.Matched < opts.Max {
		batch, err := s.next(ctx, maxBatch)
		if err != nil {
			return res, fmt.Errorf("delete: %w", err)
		}
		if len(batch) == 0 {
			if ns := s.notSeen(); ns != nil {
				var nse *NotSeenError
				if errors.As(ns, &nse) {
					res.NotSeen = nse.NotSeen()
				}
				failure = errors.Join(failure, ns)
			}
			break
		}
		var (
			del  []sqsbatch.Entry
			msgs []Message
		)
		for _, raw := range batch {
			m := newMessage(raw)
			res.Scanned++
			s.hold(raw)
			if !opts.Filter.Matches(m, opts.Now()) || (opts.Max > 0 && res.Matched >= opts.Max) {
				continue
			}
			res.Matched++
			del = append(del, sqsbatch.Entry{Handle: s.handle(m.ID, raw)})
			msgs = append(msgs, m)
		}
		if len(del) == 0 {
			continue
		}
		// The delete runs to its end even when ctx ends meanwhile: an
		// abandoned call may have taken effect.
		dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), callTimeout)
		deleted := sqsbatch.NewDeleter(client, queueURL).Run(dctx, del, sqsbatch.Policy{CallTimeout: callTimeout})
		cancel()
		var whole error
		for i, r := range deleted {
			m := msgs[i]
			if !r.OK {
				res.Failed++
				if r.Whole && whole == nil {
					whole = r.Err
				} else if failure == nil {
					failure = fmt.Errorf("delete: deleting message %s from queue %s failed after %d attempts; it stays in the queue: %w", m.ID, queueref.Name(queueURL), r.Attempts, r.Err)
				}
				continue
			}
			s.forget(m.ID)
			res.Deleted++
			if opts.OnDelete != nil {
				opts.OnDelete(m)
			}
		}
		if whole != nil {
			return res, errors.Join(failure, fmt.Errorf("delete: deleting %d messages from queue %s failed; they stay in the queue: %w", res.Failed, queueref.Name(queueURL), whole))
		}
		if ctx.Err() != nil {
			return res, fmt.Errorf("delete: %w", interrupted(ctx))
		}
	}
	return res, failure
}

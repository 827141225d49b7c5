package fleet

import (
	"context"
	"errors"
	"fmt"

	"github.com/sqsworker/sqsworker/dlq"
	"github.com/sqsworker/sqsworker/queueref"
)

// The codes of Lint's findings (documented on Lint).
const (
	codeReceiveBudget       = "fleet-receive-budget"
	codeApproximateAttempts = "fleet-attempts-from-receive-count"
)

// defaultSnoozeBudget is how many snoozes Lint expects a job may meet
// when LintOptions.Snoozes is zero (see there).
const defaultSnoozeBudget = 50

// maxReceiveCount is the largest maxReceiveCount SQS takes.
const maxReceiveCount = 1000

// LintOptions describes how a queue's consumer uses the fleet controls,
// for Lint. Every field's zero value selects the documented default.
type LintOptions struct {
	// Attempts is how many deliveries the retry policy allows
	// (numRetries+1). Zero value: 4, the worker's default policy's.
	Attempts int
	// Snoozes is how many times one job may be snoozed by the controls
	// over its life (waiting for a token or a cap's slot, behind an open
	// breaker, on a paused queue with Pauser.Middleware). Zero value: 50
	// (a breaker open for an hour snoozes a job about 16 times, OpenFor
	// 30 s doubling to 5 minutes; a tenant's backlog under a cap or a rate
	// limit a few dozen times).
	Snoozes int
	// ExactAttempts says the consumer counts attempts exactly, with
	// retry/dynamocounter (worker.Options.AttemptCounter), rather than
	// from ApproximateReceiveCount (the default).
	ExactAttempts bool
}

// Lint checks queue (a name, URL or ARN) against the one cost of the
// fleet controls that the library cannot take away on a FIFO queue: there
// a snooze — a job waiting for a rate-limit token or a cap's slot, behind
// an open breaker, on a paused queue — hides the message, which is a
// receive, and SQS dead-letters a message after maxReceiveCount receives,
// whether its handler failed or not. (A FIFO message cannot be relayed as
// a fresh copy: the copy would go to the end of its group.)
//
// On a standard queue Lint reports nothing: waiting never spends the
// receive budget there, since the runtime relays a snoozed message as a
// fresh copy that carries the job's ID and the attempts it spent (see
// retry.Snooze), so a flood of any length dead-letters no job that did not
// fail, and snoozes do not count as attempts.
//
// The rule on a FIFO queue: maxReceiveCount must leave room for Snoozes
// receives beyond the policy's Attempts (maxReceiveCount ≥ Attempts +
// Snoozes, capped at SQS's 1000); otherwise a job that waited that often is
// dead-lettered by SQS without having failed (finding code
// "fleet-receive-budget", a warning; an error when maxReceiveCount leaves
// no room at all). And unless attempts are counted exactly
// (ExactAttempts), each snooze also raises the ApproximateReceiveCount the
// worker numbers attempts by, so a snoozed job has fewer tries left when
// it runs (code "fleet-attempts-from-receive-count", a warning). The fix
// for both: maxReceiveCount well above the attempts (for example 100, or
// Attempts + Snoozes) and retry/dynamocounter, so the retry policy, not
// the receive count, decides when a failing job is dead-lettered;
// dynamocounter counts handler starts and takes a snoozed attempt back. A
// queue without a RedrivePolicy gets dlq.Lint's finding, not these. Lint
// needs sqs:GetQueueAttributes and sqs:GetQueueUrl.
func Lint(ctx context.Context, client dlq.API, queue string, opts LintOptions) ([]dlq.Finding, error) {
	if opts.Attempts < 0 || opts.Snoozes < 0 {
		return nil, errors.New("fleet.Lint: LintOptions.Attempts and Snoozes must not be negative (zero selects the default)")
	}
	if opts.Attempts == 0 {
		opts.Attempts = 4
	}
	if opts.Snoozes == 0 {
		opts.Snoozes = defaultSnoozeBudget
	}
	t, err := dlq.Discover(ctx, client, queue)
	if errors.Is(err, dlq.ErrNoRedrivePolicy) {
		return nil, nil // dlq.Lint reports it
	}
	if err != nil {
		return nil, err
	}
	if !t.FIFO {
		return nil, nil // snoozes are relayed: no receive is spent waiting
	}
	name := queueref.Name(t.SourceURL)
	var fs []dlq.Finding
	want := min(opts.Attempts+opts.Snoozes, maxReceiveCount)
	if room := t.MaxReceiveCount - opts.Attempts; t.MaxReceiveCount < want {
		sev, what := dlq.SeverityWarning, fmt.Sprintf("leaves room for %d snoozes", max(room, 0))
		if room <= 0 {
			sev, what = dlq.SeverityError, "leaves no room for a single snooze"
		}
		fs = append(fs, dlq.Finding{Severity: sev, Code: codeReceiveBudget,
			Message: fmt.Sprintf("queue %s's maxReceiveCount is %d and the retry policy allows %d attempts: it %s, but with fleet controls a job may be snoozed %d times (waiting for a token or a cap's slot, behind an open breaker, on a paused queue), each snooze a receive; SQS then dead-letters the job for its receive count although its handler never failed",
				name, t.MaxReceiveCount, opts.Attempts, what, opts.Snoozes),
			Fix: fmt.Sprintf("raise maxReceiveCount to at least %d (`sqsworker setup --max-receive-count %d %s`; SQS allows up to 1000), and count attempts with retry/dynamocounter so the retry policy, not the receive count, dead-letters a failing job", want, want, name)})
	}
	if !opts.ExactAttempts {
		fs = append(fs, dlq.Finding{Severity: dlq.SeverityWarning, Code: codeApproximateAttempts,
			Message: fmt.Sprintf("queue %s's consumer numbers attempts by ApproximateReceiveCount, which every snooze by a fleet control raises: a job snoozed k times has k fewer of its %d attempts left when it runs, and one that waited long enough is dead-lettered on its first failure", name, opts.Attempts),
			Fix:     "count attempts exactly with retry/dynamocounter (worker.Options.AttemptCounter): it counts handler starts and takes a snoozed attempt back; then check with `sqsworker doctor --fleet --exact-attempts`"})
	}
	return fs, nil
}

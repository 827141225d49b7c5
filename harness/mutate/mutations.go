package main

// mutations is the recorded list: each a one-line change that would lose or
// mishandle a job, and the tests that notice it. Keep each's tests narrow
// (a -run pattern), so that `make mutate` stays a matter of minutes.
var mutations = []Mutation{
	// The settlement engine (internal/settle): what becomes of a message.
	{
		Name: "settle/resend-failed-then-deleted", File: "internal/settle/engine.go",
		Anchor: "case stageResend:", Original: "if !o.OK {", Mutant: "if false {",
		Packages: []string{"./internal/settle/"}, Run: "TestEngineDeletesADelayedJobOnlyAfterItsCopyIsConfirmed",
		Why: "a delayed job whose fresh copy was not confirmed is deleted anyway: the job is gone (issue 37)",
	},
	{
		Name: "settle/copy-failed-then-deleted", File: "internal/settle/engine.go",
		Anchor: "case stageCopy:", Original: "if !o.OK {", Mutant: "if false {",
		Packages: []string{"./internal/settle/"}, Run: "TestEngineNeverDeletesWithoutConfirmedCopy|TestEnginePlans",
		Why: "a failed message is deleted although its dead-letter copy was not confirmed: lost",
	},
	{
		Name: "settle/permanent-retried", File: "internal/settle/decide.go",
		Original: "if errors.Is(err, retry.ErrPermanent) {", Mutant: "if false && errors.Is(err, retry.ErrPermanent) {",
		Packages: []string{"./internal/settle/"}, Run: "TestDecide|TestEnginePlans",
		Why: "a poison message (retry.Permanent) is retried instead of dead-lettered at once",
	},
	{
		Name: "settle/never-exhausted", File: "internal/settle/decide.go",
		Original: "if !again {", Mutant: "if !again && false {",
		Packages: []string{"./internal/settle/"}, Run: "TestDecide|TestEnginePlans",
		Why: "a message whose retries are exhausted is retried for ever instead of dead-lettered",
	},
	{
		Name: "settle/delay-not-capped-by-receive", File: "internal/settle/decide.go",
		Original: "return max(min(sqslimit.CapVisibility(d), left), 0)", Mutant: "return max(sqslimit.CapVisibility(d), 0*left)",
		Packages: []string{"./internal/settle/"}, Run: "TestEngineCapsTheDelayFromTheReceive",
		Why: "a retry delay beyond what is left of the 12-hour limit is asked for: SQS refuses it and the message comes back at once",
	},
	// The snooze relay (internal/settle/engine.go): waiting never spends the
	// queue's receive budget, and a relayed copy is the same job.
	{
		Name: "settle/relay-failed-then-deleted", File: "internal/settle/engine.go",
		Original: "if !o.OK && j.want == Snoozed {", Mutant: "if !o.OK && j.want == Snoozed { o.OK = true }; if false {",
		Packages: []string{"./internal/settle/"}, Run: "TestSnoozeRelay",
		Why: "a snoozed message whose fresh copy was not confirmed is deleted anyway: the job is gone",
	},
	{
		Name: "settle/relay-not-near-dlq", File: "internal/settle/engine.go",
		Original: "nearDLQ := q.RedriveUnknown || q.MaxReceiveCount > 0 && j.Msg.ReceiveCount+1+schedule.Reserve > q.MaxReceiveCount", Mutant: "nearDLQ := q.RedriveUnknown",
		Packages: []string{"./internal/settle/"}, Run: "TestSnoozeRelay",
		Why: "with an exact attempt counter, a snooze whose next receive reaches maxReceiveCount is hidden, not relayed: SQS dead-letters a job that only waited",
	},
	{
		Name: "settle/relay-attempts-reset", File: "internal/settle/engine.go",
		Original: "schedule.AttemptsValue(m.Attempt - 1)", Mutant: "schedule.AttemptsValue(0)",
		Packages: []string{"./internal/settle/"}, Run: "TestSnoozeRelay|TestRelayedCopyIsTheSameJob",
		Why: "a relayed copy forgets the attempts its job spent: each snooze gives a failing job a fresh retry budget, so it is never dead-lettered",
	},
	// The settlement batcher (internal/settle/batcher.go).
	{
		Name: "batcher/entry-failure-not-retried", File: "internal/settle/batcher.go",
		Original: "case r.Class.Retryable():", Mutant: "case false:",
		Packages: []string{"./internal/settle/"}, Run: "TestEntryFailuresRetried",
		Why: "a delete SQS failed for a moment is given up: the message is delivered again",
	},
	{
		Name: "batcher/throttled-call-not-retried", File: "internal/settle/batcher.go",
		Original: "if class.Retryable() {", Mutant: "if false {",
		Packages: []string{"./internal/settle/"}, Run: "TestEveryTenthCallThrottledAllConfirmed",
		Why: "a throttled batch call is given up: its messages are delivered again",
	},
	// The batch layer every SQS batch call goes through (internal/sqsbatch).
	{
		Name: "sqsbatch/failure-beats-success", File: "internal/sqsbatch/sqsbatch.go",
		Original: "found && !res[i].OK {", Mutant: "found {",
		Packages: []string{"./internal/sqsbatch/"}, Run: "TestSuccessWinsOverFailureForOneID|TestOnceMapsResultsById",
		Why: "an entry SQS confirmed is taken for failed when the answer also lists it failed",
	},
	{
		Name: "sqsbatch/missing-entry-final", File: "internal/sqsbatch/sqsbatch.go",
		Original: "res[i].Err, res[i].Class = ErrNoResult, sqserr.Transient", Mutant: "res[i].Err, res[i].Class = ErrNoResult, sqserr.Fatal",
		Packages: []string{"./internal/sqsbatch/"}, Run: "TestMissingEntryIsFailed",
		Why: "an entry the answer left out is not retried",
	},
	{
		Name: "sqsbatch/retry-fatal", File: "internal/sqsbatch/sqsbatch.go",
		Original: "r.Class.Retryable() && attempt < p.MaxAttempts", Mutant: "attempt < p.MaxAttempts",
		Packages: []string{"./internal/sqsbatch/"}, Run: "TestRetryRule",
		Why: "an entry SQS refused for good is sent again and again",
	},
	// The heartbeat (internal/heartbeat, behind visibility and the worker).
	{
		Name: "heartbeat/extend-at-the-deadline", File: "internal/heartbeat/heartbeat.go",
		Original: "l.at = l.deadline - h.cfg.threshold", Mutant: "l.at = l.deadline",
		Packages: []string{"./internal/heartbeat/"}, Run: "TestExtendsThresholdBeforeEachDeadline",
		Why: "leases are extended at their deadline, not before it: the message is visible for a moment and runs twice",
	},
	{
		Name: "heartbeat/past-twelve-hours", File: "internal/heartbeat/heartbeat.go",
		Original: "if left < ask {", Mutant: "if false {",
		Packages: []string{"./internal/heartbeat/"}, Run: "TestTwelveHourLimit",
		Why: "an extension beyond SQS's 12-hour limit is asked for: refused, and the handler is not told",
	},
	{
		Name: "heartbeat/stale-retried", File: "internal/heartbeat/heartbeat.go",
		Original: "case sqserr.Stale, sqserr.Invalid, sqserr.Fatal:", Mutant: "case sqserr.Invalid, sqserr.Fatal:",
		Packages: []string{"./internal/heartbeat/"}, Run: "TestLostOwnershipEndsOnlyThatLease|TestEntryFailureCodes",
		Why: "a lease whose ownership is lost is retried instead of ending its handler: two consumers run the job",
	},
	// Fleet controls: waiting never costs a job.
	{
		Name: "fleet/cap-wait-ended-is-success", File: "fleet/cap.go",
		Original: `return retry.Snooze(time.Second, "fleet: cap "+c.name+": "+err.Error())`, Mutant: "return nil",
		Packages: []string{"./fleet/"}, Run: "TestCapWaitEndedByTheContextIsNotASuccess",
		Why: "a job whose wait for a cap slot ended with its context reports success: the worker deletes it unrun (issue 37)",
	},
	{
		Name: "fleet/cap-full-is-success", File: "fleet/cap.go",
		Original: "c.f.st.capSnoozed.Add(1)", Mutant: "return nil",
		Packages: []string{"./fleet/"}, Run: "TestCapMiddleware",
		Why: "a job over the cap reports success unrun: deleted",
	},
	{
		Name: "fleet/paused-is-success", File: "fleet/pause.go",
		Original: `return retry.Snooze(snoozeFor(p.o.Snooze), "fleet: queue "+p.queue+" is paused")`, Mutant: "_ = retry.Snooze; return nil",
		Packages: []string{"./fleet/"}, Run: "TestPauserMiddleware|TestPauseHonouredByWorker",
		Why: "a job received while its queue is paused reports success unrun: deleted",
	},
	{
		Name: "fleet/breaker-open-is-success", File: "fleet/breaker.go",
		Original: `return retry.Snooze(snoozeFor(wait), "fleet: breaker "+b.name+" is open")`, Mutant: "return nil",
		Packages: []string{"./fleet/"}, Run: "TestBreakerOpensProbesAndCloses",
		Why: "a job held back by an open breaker reports success unrun: deleted",
	},
	// The dead-letter queue tools (dlq).
	{
		Name: "dlq/redrive-interrupted-counted-moved", File: "dlq/redrive.go",
		Original: "case res.OK:", Mutant: "case res.OK || res.Class == sqserr.Canceled:",
		Packages: []string{"./dlq/"}, Run: "TestRedriveInterrupt",
		Why: "a redrive interrupted in its retry wait counts the batch as moved and deletes it from the DLQ unsent: in neither queue (issue 37)",
	},
	{
		Name: "dlq/redrive-moves-what-came-back", File: "dlq/redrive.go",
		Original: "case r.cameBack(m):", Mutant: "case false && r.cameBack(m):",
		Packages: []string{"./dlq/"}, Run: "TestRedriveLeavesWhatComesBack",
		Why: "a redrive moves the jobs that fail again over and over, until interrupted (issue 37)",
	},
	{
		Name: "deadletter/move-deletes-unsent", File: "internal/deadletter/copy.go",
		Anchor: "out, err := awscall.SQS(ctx, awscall.Rule{}, m.client.SendMessage, in)", Original: "if err != nil {", Mutant: "if false {",
		Packages: []string{"./internal/deadletter/"}, Run: "TestMoveSendFailsDeletesNothing",
		Why: "a Mover deletes the source message although its dead-letter copy was not sent: lost",
	},
	{
		Name: "dlq/redrive-keeps-relay-attributes", File: "dlq/redrive.go",
		Original: "attrs := sched.StripRelay(m.raw.MessageAttributes)", Mutant: "attrs := m.raw.MessageAttributes",
		Packages: []string{"./dlq/"}, Run: "TestRedriveStripsRelayAttributes|TestRedriveLeavesWhatComesBack",
		Why: "a redriven job keeps the attempts it spent before a snooze: it is dead-lettered again at its first failure, and if it was relayed again the redrive cannot tell it came back",
	},
	{
		Name: "dlq/redrive-release-later", File: "dlq/inspect.go",
		Original: "entries = append(entries, sqsbatch.Entry{Handle: handle, Timeout: 0})", Mutant: "entries = append(entries, sqsbatch.Entry{Handle: handle, Timeout: 30})",
		Packages: []string{"./dlq/"}, Run: "TestInspect|TestRedriveInterrupt",
		Why: "messages a listing or an interrupted redrive did not move stay hidden instead of being released at once",
	},
	// The worker's shutdown: a handler that ignores its context.
	{
		Name: "worker/held-over-result-dropped", File: "worker/process.go",
		Original: "if !ran {", Mutant: "if !ran || r.holdover.Load() != nil {",
		Packages: []string{"./worker/"}, Run: "TestHandlerIgnoringContextDoesNotHoldRun",
		Why: "what a handler Run returned without returns is dropped: its message comes back and runs again (issue 37)",
	},
	{
		Name: "worker/held-over-lease-ends", File: "worker/holdover.go",
		Original: "_ = hb.Run(ctx)", Mutant: "_ = ctx",
		Packages: []string{"./worker/"}, Run: "TestHandlerIgnoringContextDoesNotHoldRun",
		Why: "the lease of a message whose handler Run returned without ends with Run: another consumer runs it while the handler still does (issue 37)",
	},
	// The Lambda adapter (worker/sqslambda): the partial batch response.
	{
		Name: "sqslambda/failed-record-deleted", File: "worker/sqslambda/handler.go",
		Anchor: "func (r *rec) Change(", Original: "r.report = true", Mutant: "r.report = false",
		Packages: []string{"./worker/sqslambda/"}, Run: "TestFailedRecordComesBackAfterThePolicyDelay|TestFailuresReportedInBatchOrder",
		Why: "a record that failed (to be retried) is left out of batchItemFailures: Lambda deletes it",
	},
	{
		Name: "sqslambda/report-inverted", File: "worker/sqslambda/handler.go",
		Original: "if !r.report {", Mutant: "if r.report {",
		Packages: []string{"./worker/sqslambda/"}, Run: "TestFailuresReportedInBatchOrder|TestPermanentGoesToTheDLQAndIsNotReported",
		Why: "the partial batch response lists the records that succeeded instead of those that failed",
	},
	// Unique keys (package unique): a key follows its job's fate.
	{
		Name: "unique/early-release-dropped", File: "unique/unique.go",
		Anchor: "func (s *Store) releaseOnSuccess(", Original: "if err := s.release(context.WithoutCancel(ctx), c.key, c.token); err != nil {", Mutant: "if err := error(nil); err != nil {",
		Packages: []string{"./unique/"}, Run: "TestMiddleware",
		Why: "a succeeded job's key is freed only after its delete: a kill between the two holds the key until its expiry (two weeks by default)",
	},
	{
		Name: "unique/failed-job-released", File: "unique/unique.go",
		Anchor: "func (s *Store) releaseOnSuccess(", Original: "if err := next.Handle(ctx, m); err != nil {", Mutant: "if err := next.Handle(ctx, m); err != nil && false {",
		Packages: []string{"./unique/"}, Run: "TestMiddleware",
		Why: "a failing handler's job is reported a success: it is deleted instead of retried, and its key freed",
	},
	{
		Name: "unique/failed-early-release-not-retried", File: "unique/unique.go",
		Original: "if st.Outcome != worker.Snoozed && s.forgetEarly(c.token) {", Mutant: "if st.Outcome != worker.Snoozed && (s.forgetEarly(c.token) || st.Outcome == worker.Deleted) {",
		Packages: []string{"./unique/"}, Run: "TestMiddleware",
		Why: "a succeeded job whose early release failed is never released after its delete: its key is held until its expiry",
	},
}

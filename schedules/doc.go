// Package schedules runs periodic jobs and jobs due at a time on Amazon
// EventBridge Scheduler, with no leader process in the fleet.
//
// # Periodic jobs, declared in code
//
// A service declares its schedules ([Schedule]: a cron, rate or at()
// expression, an IANA time zone, the job's body and attributes, the
// target queue's ARN, a flexible window, start and end) and, on deploy,
// calls [Apply]: the schedule group (Options.Group) then holds exactly the
// declared set. Missing schedules are created, different ones updated,
// undeclared ones deleted. Any number of processes may apply the same set
// at once: a schedule another process created or deleted first is compared
// again, never duplicated. [Diff] returns the same changes without making
// them; [List] reads the group. Invalid input (a malformed expression, an
// unknown time zone, an at() in the past, a body over Scheduler's input
// limit, a missing execution role) is refused with [ErrInvalid] before any
// call, with the fix in the message.
//
// # Jobs due at a time
//
// [Jobs] sends a job due at a time through a one-time schedule (at(),
// ActionAfterCompletion DELETE) instead of parking it in the queue: one
// CreateSchedule and one delivery, nothing in flight while it waits. The
// job can be cancelled or moved by its ID until it fires. Cancel and
// Reschedule act until one minute before the due time; from then on the
// fire wins (they return false and the job runs), because Scheduler
// invokes anywhere within the due minute. So a Cancel that returned true
// means the job never runs. The in-queue delay of producer is still the
// better way for delays up to 15 minutes (one SendMessage, no Scheduler
// request) and for FIFO queues that need a deduplication ID per message
// (Scheduler's SQS target sends a message group ID only; the queue then
// needs content-based deduplication).
//
// A producer sends its long delays this way when its Options.Schedule is
// Jobs.At (Options.ScheduleAfter, 15 minutes by default, is the horizon):
//
//	o.Schedule = func(ctx context.Context, due time.Time, m producer.Message) (string, error) {
//		return jobs.At(ctx, "", due, m)
//	}
//
// The Result's MessageID is then the job's ID, for Cancel and Reschedule.
//
// # Exactly one run per tick
//
// Scheduler's SQS target sends a body and nothing else, and delivers at
// least once. The input of every schedule this package writes is an
// envelope, a JSON object carrying the job's body, its message attributes
// and Scheduler's context attributes <aws.scheduler.schedule-arn>,
// <aws.scheduler.scheduled-time> and <aws.scheduler.attempt-number> (which
// Scheduler replaces with their values; a job body containing these
// keywords has them replaced too). Put [Unwrap] first in the worker's
// chain: the handler then sees the job's own body and attributes, plus
// "sqsworker.schedule-arn" and "sqsworker.scheduled-time" ([TickOf]).
// Unwrap skips a second delivery of a tick with UnwrapOptions.Dedup (a
// conditional write), or chain idempotency with Key [TickKey]; and with
// Schedule.Overlap "skip" it skips a tick that arrives while the previous
// run of the schedule is still running in the same process.
//
// UnwrapOptions.Table (with DynamoDB) makes both hold across processes:
// each tick is claimed by a conditional write in an idempotency table, and
// a run of a "skip" schedule holds a lease on the schedule there, renewed
// every third of UnwrapOptions.Lease while it runs and removed when it
// returns. A tick arriving while any process holds the lease is skipped
// ("overlap"); a process that dies mid-run (kill -9) blocks the schedule
// at most Lease, after which its lease has expired and the next tick runs.
// A run whose lease could not be renewed in time, or was taken over, has
// its context cancelled, so two runs never overlap for long.
//
// # Time zones and daylight saving time
//
// Cron and at() expressions are read on the wall clock of the schedule's
// time zone. AWS documents (EventBridge Scheduler user guide, "Schedule
// types", daylight saving time; re:Post "eventbridge-scheduler-adjust-dst"):
// when the clocks spring forward, an invocation whose cron expression
// falls on the non-existent time is skipped; when they fall back, the
// schedule runs only once and does not repeat. Rate expressions count
// fixed durations (a day is 24 hours) and are not moved by DST. Next and
// schedulestest apply these rules; where a repeated wall time fires (AWS
// does not say which of the two occurrences) they pick the first. For
// 2026:
//
//	zone              expression           spring forward           fall back                 ticks in 2026
//	Europe/Paris      cron(30 2 * * ? *)   29 Mar: no tick          25 Oct: once, 00:30Z      364
//	                                       (02:00 → 03:00)          (first 02:30, CEST)
//	America/New_York  cron(30 2 * * ? *)   8 Mar: no tick           1 Nov: once, 07:30Z       364
//	                                       (02:00 → 03:00)          (02:30 EST, not repeated)
//	America/New_York  cron(30 1 * * ? *)   8 Mar: 06:30Z            1 Nov: once, 05:30Z       365
//	                                                                (first 01:30, EDT)
//	UTC               cron(30 2 * * ? *)   no change: 02:30Z        no change: 02:30Z         365
//
// Every other day the tick is at 02:30 (01:30) local time. A cron field
// stepping through the repeated hour (cron(0/30 * * * ? *)) fires at each
// wall time once, so the repeated hour has no ticks of its own.
//
// # Cron syntax
//
// AWS's six fields: minutes hours day-of-month month day-of-week year,
// with , - * / in every field, ? in exactly one of the two day fields,
// L (last day of the month; nL the last weekday n of the month), W
// (nearest weekday: 15W, LW) and # (d#k, the k-th weekday d) as AWS
// documents; day-of-week runs 1 (SUN) to 7 (SAT). No maintained Go cron
// library parses this dialect (robfig/cron has no L, W or #), so the
// parser is the package's own and is fuzzed.
//
// # Failures and calls
//
// Every schedule gets an explicit retry policy (Options.MaxRetries,
// MaxEventAge) and, with Options.DLQ, a dead-letter queue. [Lint] checks a
// group's failure handling (sqsworker doctor --schedule-group runs it; the
// console's Schedules page shows each dead-letter queue's depth). Its
// dlq.Finding codes, each message naming its schedules:
//
//	code                          severity  what it means
//	schedule-target-missing       error     the target queue does not exist: every tick fails
//	schedule-dlq-missing          error     the dead-letter queue does not exist
//	schedule-dlq-fifo             error     a FIFO dead-letter queue, which Scheduler does not take
//	schedule-no-dlq               warning   a tick Scheduler gives up on is lost
//	schedule-dlq-not-empty        warning   the dead-letter queue holds N ticks Scheduler failed to deliver
//	schedule-dlq-retention-short  warning   the dead-letter queue keeps messages under 7 days
//	schedule-no-retry-policy      warning   no retry policy is set (Scheduler's defaults apply unseen)
//	schedule-retries-off          warning   the retry policy allows 0 retries
//	schedule-target-not-sqs       info      the target is not an SQS queue; not checked
//
// Every Scheduler
// call the package makes has the SDK's retryer turned off and goes through
// one retry rule (throttling and server errors, with backoff).
// schedules/schedulestest is an in-memory Scheduler for tests.
package schedules

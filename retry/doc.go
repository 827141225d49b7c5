// Package retry decides what happens after a job fails: how long the message
// stays invisible before its next delivery, and when to stop retrying and hand
// the message to the dead-letter queue.
//
// It holds four things, all pure and free of I/O except the attempt counter:
//
//   - [Policy], the one interface the worker asks after a failure: "attempt n
//     failed; wait how long, or give up?" [DeliveryPolicy] (SNS's delivery
//     retry policy, applied to SQS), [FromBackOff] (a [BackOff] sequence,
//     such as cenkalti/backoff/v4's) and [PolicyFunc] implement it.
//   - Outcomes a handler returns: [Permanent] (bad input: to the DLQ now,
//     found with errors.Is(err, [ErrPermanent])), [After] (retry after
//     exactly this long, an [*AfterError]) and [Snooze] (not yet, and not a
//     failure, a [*SnoozeError]).
//   - [AttemptCounter], which says which attempt a delivery is and takes a
//     snoozed one back: SQS's ApproximateReceiveCount by default
//     ([ReceiveCount]), or an exact count kept in DynamoDB (package
//     retry/dynamocounter).
//   - The SQS visibility cap, visibility.MaxVisibility, which bounds every delay.
//
// # Attempts and retries
//
// An attempt is one delivery of a message to the handler. Attempt 1 is the
// first delivery; a retry is every delivery after it. A policy with
// numRetries = 3 allows 4 deliveries: when attempt n (1 ≤ n ≤ 3) fails,
// Delay(n) returns the wait before retry n, that is before attempt n+1; when
// attempt 4 fails, Delay(4) reports false and the message goes to the DLQ.
//
// # The delivery policy and its four phases
//
// [DeliveryPolicy] has the JSON shape of an Amazon SNS HTTP/S delivery policy
// (healthyRetryPolicy with minDelayTarget, maxDelayTarget, numRetries,
// numNoDelayRetries, numMinDelayRetries, numMaxDelayRetries, backoffFunction;
// throttlePolicy.maxReceivesPerSecond). Delays are whole seconds in the JSON.
// The numRetries retries are split, in order, into four phases:
//
//  1. immediate: numNoDelayRetries retries with no delay;
//  2. pre-backoff: numMinDelayRetries retries, each after minDelayTarget;
//  3. backoff: m = numRetries − numNoDelayRetries − numMinDelayRetries −
//     numMaxDelayRetries retries, going from minDelayTarget (the first one) to
//     maxDelayTarget (the last one) along the backoff function;
//  4. post-backoff: numMaxDelayRetries retries, each after maxDelayTarget.
//
// Absent fields take SNS's defaults: numRetries 3, minDelayTarget 20,
// maxDelayTarget 20, the three phase counts 0, backoffFunction linear. So the
// default policy retries three times, 20 s apart ([DefaultDeliveryPolicy]).
//
// # The four backoff functions
//
// [HealthyRetryPolicy].BackoffFunction names one of four curves, in any
// case: "linear" (the default), "arithmetic", "geometric" or "exponential".
// In the backoff phase, let i = 0 … m−1 number its retries, t = i/(m−1),
// min = minDelayTarget, max = maxDelayTarget and R = max/min. Retry i waits
//
//	linear       d = min + (max−min)·t                      equal steps
//	arithmetic   d = min + (max−min)·t·(2−t)                steps shrink by a constant amount
//	geometric    d = min·R^t                                each delay = the previous × r, r = R^(1/(m−1))
//	exponential  d = min + (max−min)·(R^(2t) − 1)/(R² − 1)  each step = the previous step × r²
//
// All four start at exactly min (i = 0), end at exactly max (i = m−1) and
// never decrease. They differ in how fast they climb, as SNS's comparison
// graph shows: arithmetic rises early and levels off, linear climbs at a
// constant rate, geometric and exponential stay near min and rise late,
// exponential more so. For 0 < t < 1 and min < max they are strictly ordered,
//
//	arithmetic > linear > geometric > exponential,
//
// so no two give the same schedule once the backoff phase has at least three
// retries and min < max. The degenerate cases, where all four coincide, are:
// m = 1 (the single backoff retry waits min), m = 2 (min, then max), and
// min = max (every retry waits min). For the SNS graph's parameters (min 5 s,
// max 260 s, 10 retries) see Example (BackoffFunctions).
//
// Delays have nanosecond resolution (SQS's visibility timeout takes whole
// seconds: the runtimes round a delay up, so a message never comes back early).
//
// # Jitter
//
// SNS applies jitter to its retries; so does this package. [DeliveryPolicy.Delays]
// is the nominal schedule d₁ … dₙ; [DeliveryPolicy.Delay] draws retry n's
// actual delay from a range that depends on [DeliveryPolicy.Jitter]
// (AWS Architecture blog, "Exponential Backoff and Jitter"):
//
//	"none"          dₙ
//	"full"          uniform in [0, dₙ]
//	"equal"         uniform in [dₙ/2, dₙ]       (the default: also "", the zero value)
//	"decorrelated"  uniform in [min, min(bound, 3·dₙ₋₁)]
//
// Immediate retries always wait 0. For "decorrelated", dₙ₋₁ is the
// previous retry's nominal delay (at least min) — a Policy is a pure function
// of the attempt, so it cannot remember the previous random draw — and bound
// is the phase's bound: min in the pre-backoff phase (whose retries therefore
// stay at min), max in the backoff and post-backoff phases.
//
// "equal" is the default because it keeps what a user writes meaningful:
// a retry never comes sooner than half its nominal delay (a downstream that
// needed 20 s to recover gets at least 10 s) and never later than the nominal
// delay, so [DeliveryPolicy.Total] is an upper bound of the real schedule,
// while retries of messages that failed together still spread out. No mode
// ever goes below 0 or above the phase's bound. [DeliveryPolicy.MaxTotal] is
// the longest the schedule can take under the chosen jitter. Randomness comes
// from [DeliveryPolicy.Rand] when set (a seeded source makes tests
// deterministic; Delay serialises its calls to it), from math/rand/v2's
// global generator otherwise.
//
// # SNS limits and SQS limits
//
// [ParseDeliveryPolicy] and [DeliveryPolicy.Validate] apply SNS's rules, so a
// policy that passes them is one SNS would accept too:
// 1 ≤ minDelayTarget ≤ maxDelayTarget ≤ 3600, 0 ≤ numRetries ≤ 100, phase
// counts ≥ 0 with their sum ≤ numRetries, a known backoffFunction (any case),
// maxReceivesPerSecond ≥ 1 when present, and — SNS's hard limit for HTTP/S —
// at most 3600 s of delay in total for one message.
//
// SQS allows more, and [ParseDeliveryPolicySQS] and
// [DeliveryPolicy.ValidateSQS] apply SQS's limits instead:
//
//	                  SNS rules   SQS limits   why
//	maxDelayTarget    ≤ 3600 s    ≤ 43200 s    SQS can hide a message for up to 12 h
//	numRetries        ≤ 100       ≤ 999        a redrive policy's maxReceiveCount is at most 1000
//	total delay       ≤ 3600 s    no limit     bounded by the queue's retention period (≤ 14 days)
//
// Everything else is the same. Whatever the mode, delays are capped at
// visibility.MaxVisibility. Unlike SNS, nothing here drops a message when its
// policy runs out: the worker moves it to the dead-letter queue.
//
// # Parsing
//
// [ParseDeliveryPolicy] accepts the three shapes SNS documents use: the topic
// attribute ({"http": {"defaultHealthyRetryPolicy": …, "defaultThrottlePolicy":
// …}}), the subscription attribute ({"healthyRetryPolicy": …,
// "throttlePolicy": …}) and the bare retry object ({"minDelayTarget": …}).
// sicklyRetryPolicy, guaranteed, requestPolicy, disableSubscriptionOverrides
// and their topic-level forms are accepted and ignored, as SNS does; null means
// absent. Field names are case-sensitive and an unknown field is an error that
// names it (with a suggestion when it looks like a typo): a misspelt field
// would otherwise fall back to its default without a word, silently changing
// when jobs are retried and how soon they land in the dead-letter queue.
// Every error is a
// [*PolicyError] naming the field at fault, or saying the JSON is malformed.
package retry

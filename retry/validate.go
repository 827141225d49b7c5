package retry

import (
	"fmt"
	"time"

	"github.com/sqsworker/sqsworker/internal/sqslimit"
)

// Limits of a delivery policy: SNS's rules for HTTP/S delivery policies,
// and what SQS itself allows.
const (
	snsMaxDelayTarget = 3600                                      // seconds
	sqsMaxDelayTarget = int(sqslimit.MaxVisibility / time.Second) // 43200 s, the 12 h visibility limit
	snsMaxRetries     = 100
	sqsMaxRetries     = 999       // a redrive policy's maxReceiveCount is at most 1000 deliveries
	snsMaxTotal       = time.Hour // SNS's limit on the sum of one message's retry delays
)

// PolicyError reports what is wrong with a delivery policy and what to do.
// Every error of ParseDeliveryPolicy, ParseDeliveryPolicySQS,
// DeliveryPolicy.UnmarshalJSON, Validate and ValidateSQS is one: find it
// with errors.As.
type PolicyError struct {
	// Field is the path of the field at fault as it appears in the JSON, such
	// as "healthyRetryPolicy.maxDelayTarget" or
	// "http.defaultHealthyRetryPolicy.numRetries" ("Jitter" for the Go-only
	// field). It is empty when the document itself is malformed.
	Field string
	// Problem says what is wrong and what to do about it.
	Problem string
	// Err is the underlying error, such as a *json.SyntaxError, or nil.
	Err error
	// SQSAllows is set when only SNS's stricter limits refuse the value:
	// what SQS's limits allow instead, e.g. "up to 999" or "any total".
	SQSAllows string
}

// Error returns "retry: delivery policy: <field>: <problem>", or
// "retry: delivery policy: malformed JSON: <problem>" when Field is empty,
// and for a value only SNS's limits refuse, how to validate with SQS's.
func (e *PolicyError) Error() string {
	where := e.Field
	if where == "" {
		where = "malformed JSON"
	}
	msg := "retry: delivery policy: " + where + ": " + e.Problem
	if e.SQSAllows != "" {
		msg += ", or validate with SQS's limits (ParseDeliveryPolicySQS, DeliveryPolicy.ValidateSQS), which allow " + e.SQSAllows
	}
	return msg
}

// Unwrap returns the underlying error, if any.
func (e *PolicyError) Unwrap() error { return e.Err }

// Validate checks p against SNS's rules (see the package documentation) and
// returns a *PolicyError naming the first field at fault, or nil.
func (p DeliveryPolicy) Validate() error { return p.validate(false) }

// ValidateSQS checks p against SQS's limits, which allow more than SNS:
// maxDelayTarget up to 43200 s (the 12 h visibility limit), numRetries up to
// 999, and no limit on the total delay. It returns a *PolicyError naming the
// first field at fault, or nil.
func (p DeliveryPolicy) ValidateSQS() error { return p.validate(true) }

func (p DeliveryPolicy) validate(sqs bool) error {
	h := p.HealthyRetryPolicy
	bad := func(field, format string, args ...any) error {
		return &PolicyError{Field: "healthyRetryPolicy." + field, Problem: fmt.Sprintf(format, args...)}
	}
	snsOnly := func(field, sqsAllows, format string, args ...any) error {
		return &PolicyError{Field: "healthyRetryPolicy." + field, Problem: fmt.Sprintf(format, args...), SQSAllows: sqsAllows}
	}
	if _, ok := backoffCanonical(h.BackoffFunction); !ok {
		return bad("backoffFunction", "%q is not a backoff function; use linear, arithmetic, geometric or exponential (any case)", string(h.BackoffFunction))
	}
	if h.MinDelayTarget < 1 {
		return bad("minDelayTarget", "%d is below 1 second; use 1 or more (retries without delay belong in numNoDelayRetries)", h.MinDelayTarget)
	}
	if sqs && h.MaxDelayTarget > sqsMaxDelayTarget {
		return bad("maxDelayTarget", "%d is above %d seconds, the longest SQS can keep a message invisible (12 h); lower it", h.MaxDelayTarget, sqsMaxDelayTarget)
	}
	if !sqs && h.MaxDelayTarget > snsMaxDelayTarget {
		return snsOnly("maxDelayTarget", fmt.Sprintf("up to %d seconds (12 h)", sqsMaxDelayTarget), "%d is above SNS's limit of %d seconds; lower it", h.MaxDelayTarget, snsMaxDelayTarget)
	}
	if h.MinDelayTarget > h.MaxDelayTarget {
		return bad("minDelayTarget", "%d is above maxDelayTarget (%d); lower minDelayTarget or raise maxDelayTarget", h.MinDelayTarget, h.MaxDelayTarget)
	}
	if h.NumRetries < 0 {
		return bad("numRetries", "%d is negative; use 0 (no retry) or more", h.NumRetries)
	}
	if sqs && h.NumRetries > sqsMaxRetries {
		return bad("numRetries", "%d is above %d, the most SQS can honour (a redrive policy's maxReceiveCount is at most 1000); lower it", h.NumRetries, sqsMaxRetries)
	}
	if !sqs && h.NumRetries > snsMaxRetries {
		return snsOnly("numRetries", fmt.Sprintf("up to %d", sqsMaxRetries), "%d is above SNS's limit of %d; lower it", h.NumRetries, snsMaxRetries)
	}
	counts := []struct {
		name string
		v    int
	}{
		{"numNoDelayRetries", h.NumNoDelayRetries},
		{"numMinDelayRetries", h.NumMinDelayRetries},
		{"numMaxDelayRetries", h.NumMaxDelayRetries},
	}
	sum := 0
	for _, c := range counts {
		if c.v < 0 {
			return bad(c.name, "%d is negative; use 0 or more", c.v)
		}
		sum += c.v
	}
	if sum > h.NumRetries {
		return bad("numRetries", "%d is less than numNoDelayRetries + numMinDelayRetries + numMaxDelayRetries = %d; numRetries counts every retry, those phases included, so raise it to at least %d or lower the phase counts", h.NumRetries, sum, sum)
	}
	if !sqs {
		if total := p.Total(); total > snsMaxTotal {
			return snsOnly("numRetries", "any total", "the retries wait %v in total, above SNS's limit of %v for one message; lower numRetries, numMaxDelayRetries or maxDelayTarget", total, snsMaxTotal)
		}
	}
	if r := p.ThrottlePolicy.MaxReceivesPerSecond; r < 0 {
		return &PolicyError{Field: "throttlePolicy.maxReceivesPerSecond", Problem: fmt.Sprintf("%d is negative; use 1 or more, or leave it out for no limit", r)}
	}
	return checkJitter(p.Jitter)
}

package queueref

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/sqsworker/sqsworker/internal/sqserr"
	"github.com/sqsworker/sqsworker/internal/sqslimit"
	"github.com/sqsworker/sqsworker/internal/validate"
)

// ErrInvalid is wrapped by every error for a reference that cannot name a
// queue at all (empty, a malformed URL or ARN, a name SQS refuses): a
// mistake in the input, not a failure of SQS.
var ErrInvalid = errors.New("invalid queue reference")

// The forms of a reference, for error messages.
const (
	nameForm = "a name such as orders (1 to 80 letters, digits, hyphens and underscores; a FIFO queue's ends in .fifo)"
	urlForm  = "a URL such as https://sqs.us-east-1.amazonaws.com/123456789012/orders"
	arnForm  = "an ARN such as arn:aws:sqs:us-east-1:123456789012:orders"
	forms    = nameForm + ", " + urlForm + " or " + arnForm
)

// fifoSuffix ends every FIFO queue's name.
const fifoSuffix = ".fifo"

// ARN is a parsed SQS queue ARN: arn:PARTITION:sqs:REGION:ACCOUNT:NAME.
type ARN struct {
	Partition, Region, Account, Name string
}

// ParseARN parses an SQS queue ARN, as RedrivePolicies, Lambda events and
// SNS subscriptions carry them. Every part must be present: a partition
// (aws, aws-cn, …), an AWS region name, a 12-digit account ID and a queue
// name SQS accepts. The error wraps ErrInvalid and shows the expected form.
func ParseARN(s string) (ARN, error) {
	parts := strings.Split(s, ":")
	if len(parts) != 6 || parts[0] != "arn" || parts[2] != "sqs" {
		return ARN{}, invalid("%q is not an SQS queue ARN; want %s", s, arnForm)
	}
	a := ARN{Partition: parts[1], Region: parts[3], Account: parts[4], Name: parts[5]}
	if !validPartition(a.Partition) {
		return ARN{}, invalid("%q is not an SQS queue ARN: partition %q is not an AWS partition (aws, aws-cn, aws-us-gov, …); want %s", s, a.Partition, arnForm)
	}
	if err := sqslimit.CheckIdentity(a.Region, a.Account); err != nil {
		return ARN{}, invalid("%q is not an SQS queue ARN: %s; want %s", s, lowerFirst(err.Error()), arnForm)
	}
	if err := checkName(a.Name); err != nil {
		return ARN{}, invalid("%q is not an SQS queue ARN: %v", s, err)
	}
	return a, nil
}

// String returns the ARN.
func (a ARN) String() string {
	return "arn:" + a.Partition + ":sqs:" + a.Region + ":" + a.Account + ":" + a.Name
}

// Name returns the queue name in a reference: the last part of an ARN, the
// last path segment of a URL, or the reference itself. It does not check
// the reference (see Check); Name of a malformed reference is its best
// guess, for messages.
func Name(ref string) string {
	if strings.HasPrefix(ref, "arn:") {
		if i := strings.LastIndexByte(ref, ':'); i >= 0 {
			return ref[i+1:]
		}
	}
	if isURL(ref) {
		if u, err := url.Parse(ref); err == nil {
			ref = u.Path
		}
	}
	q := strings.TrimRight(ref, "/")
	if i := strings.LastIndexByte(q, '/'); i >= 0 {
		return q[i+1:]
	}
	return q
}

// FIFO reports whether a queue name, URL or ARN names a FIFO queue: SQS
// requires FIFO queue names, and nothing else, to end in ".fifo".
func FIFO(ref string) bool { return strings.HasSuffix(Name(ref), fifoSuffix) }

// Check reports whether ref has the form of a queue name, URL or ARN,
// without a call. The error wraps ErrInvalid and says what a valid
// reference looks like. A URL is any http or https URL whose last path
// segment is a queue name: emulators and LocalStack use their own hosts and
// paths.
func Check(ref string) error {
	switch {
	case ref == "":
		return invalid("no queue given; pass %s", forms)
	case isURL(ref):
		return checkURL(ref)
	case strings.HasPrefix(ref, "arn:"):
		_, err := ParseARN(ref)
		return err
	case strings.ContainsAny(ref, ":/"):
		return invalid("%q is not a queue name, URL or ARN; pass %s", ref, forms)
	}
	if err := checkName(ref); err != nil {
		return invalid("%v; a queue is given by %s", err, forms)
	}
	return nil
}

// Resolve turns a queue reference — a name, URL or ARN — into the queue's
// URL, asking client (an *sqs.Client, or any SQS client of the library's
// packages: the one call it makes, GetQueueUrl, has the SDK's signature):
//
//   - A URL (http:// or https://) is returned as it is, without a call.
//   - An ARN is looked up with GetQueueUrl for the ARN's name in the ARN's
//     own account (QueueOwnerAWSAccountId) and region (the call's
//     sqs.Options.Region is set to it), whatever the client's region: an
//     ARN of eu-west-1 names eu-west-1's queue, never a namesake in the
//     client's region.
//   - A name is looked up with GetQueueUrl in the client's region and
//     account.
//
// With a custom endpoint (sqs.Options.BaseEndpoint, AWS_ENDPOINT_URL_SQS:
// LocalStack, fauxqs) the lookup still goes to that endpoint; only the
// region it is signed for changes. LocalStack and fauxqs keep queues per
// region and take the region from the signature, so an ARN finds its own
// region's queue there too; an emulator with a single region ignores it.
//
// Resolve settles which queue is meant; the calls made with the URL
// afterwards go where the client sends them. SQS takes a queue's calls only
// at its own region's endpoint (another region's answers InvalidAddress,
// never another queue), so work on a queue of another region with a client
// made for that region. The CLI does this: a queue ARN picks its client's
// region.
//
// Malformed references give an error wrapping ErrInvalid (see Check); a
// queue that does not exist, one wrapping the SDK's error and saying where
// it was looked for.
func Resolve(ctx context.Context, client interface {
	GetQueueUrl(ctx context.Context, params *sqs.GetQueueUrlInput, optFns ...func(*sqs.Options)) (*sqs.GetQueueUrlOutput, error)
}, ref string) (string, error) {
	if err := Check(ref); err != nil {
		return "", err
	}
	if isURL(ref) {
		return ref, nil
	}
	in := &sqs.GetQueueUrlInput{QueueName: aws.String(ref)}
	var optFns []func(*sqs.Options)
	where := "this account and region; check the name, the region and the account (the CLI's --region and --profile)"
	if strings.HasPrefix(ref, "arn:") {
		a, _ := ParseARN(ref) // checked above
		in.QueueName, in.QueueOwnerAWSAccountId = aws.String(a.Name), aws.String(a.Account)
		optFns = append(optFns, inRegion(a.Region))
		where = fmt.Sprintf("account %s, region %s; check the ARN, and that these credentials may call sqs:GetQueueUrl there", a.Account, a.Region)
	}
	out, err := client.GetQueueUrl(ctx, in, optFns...)
	if err != nil {
		if sqserr.NotExist(err) {
			return "", fmt.Errorf("queue %s does not exist in %s: %w", Name(ref), where, err)
		}
		return "", fmt.Errorf("finding queue %s: %w", ref, err)
	}
	u := aws.ToString(out.QueueUrl)
	if u == "" {
		return "", fmt.Errorf("finding queue %s: GetQueueUrl returned no URL", ref)
	}
	return u, nil
}

// inRegion returns an SDK option function that sends one call to region.
func inRegion(region string) func(*sqs.Options) {
	return func(o *sqs.Options) { o.Region = region }
}

// checkName reports whether name is a queue name SQS accepts, by the rules
// Setup checks names with (package validate).
func checkName(name string) error {
	return validate.QueueName(name, strings.HasSuffix(name, fifoSuffix))
}

// checkURL reports whether s is an http(s) URL ending in a queue name.
func checkURL(s string) error {
	u, err := url.Parse(s)
	if err != nil || u.Host == "" || u.RawQuery != "" || u.Fragment != "" || u.User != nil {
		return invalid("%q is not a queue URL; want %s (an emulator's host and port are fine)", s, urlForm)
	}
	path := strings.TrimSuffix(u.Path, "/")
	i := strings.LastIndexByte(path, '/')
	if i < 0 {
		return invalid("%q has no queue name in its path; want %s", s, urlForm)
	}
	if err := checkName(path[i+1:]); err != nil {
		return invalid("%q is not a queue URL: %v", s, err)
	}
	return nil
}

// validPartition reports whether p looks like an AWS partition: "aws",
// optionally followed by lower-case words joined with hyphens.
func validPartition(p string) bool {
	if p != "aws" && !strings.HasPrefix(p, "aws-") {
		return false
	}
	for _, w := range strings.Split(p, "-") {
		if w == "" {
			return false
		}
		for _, r := range w {
			if r < 'a' || r > 'z' {
				return false
			}
		}
	}
	return true
}

func isURL(s string) bool { return strings.HasPrefix(s, "https://") || strings.HasPrefix(s, "http://") }

// invalid returns an error wrapping ErrInvalid with the formatted text.
func invalid(format string, args ...any) error {
	return &invalidError{msg: fmt.Sprintf(format, args...)}
}

type invalidError struct{ msg string }

func (e *invalidError) Error() string { return e.msg }
func (e *invalidError) Unwrap() error { return ErrInvalid }

func lowerFirst(s string) string {
	if s == "" {
		return s
	}
	return strings.ToLower(s[:1]) + s[1:]
}

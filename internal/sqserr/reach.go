package sqserr

import (
	"errors"
	"net"
	"net/url"
	"strings"
	"syscall"

	"github.com/aws/smithy-go"
)

// Knobs names, in the caller's terms, how its user chooses the endpoint,
// the region and the profile: the CLI's flags, or the SDK's options.
type Knobs struct {
	// Endpoint names the knobs of one service's endpoint, by the SDK's
	// service ID ("SQS", "SNS", "DynamoDB", "S3"): e.g. "--endpoint-url,
	// AWS_ENDPOINT_URL_SQS and AWS_ENDPOINT_URL".
	Endpoint func(service string) string
	Region   string // e.g. "--region"
	Profile  string // e.g. "--profile or AWS_PROFILE"
}

// EndpointVariable is the SDK's environment variable of service's own
// endpoint: AWS_ENDPOINT_URL_DYNAMODB for "DynamoDB".
func EndpointVariable(service string) string {
	return "AWS_ENDPOINT_URL_" + strings.ToUpper(strings.ReplaceAll(service, " ", "_"))
}

// SDKKnobs are the knobs of a library user: the SDK's options and
// variables.
func SDKKnobs() Knobs {
	return Knobs{
		Endpoint: func(service string) string {
			pkg := strings.ToLower(strings.ReplaceAll(service, " ", ""))
			return "the client's endpoint (" + pkg + ".Options.BaseEndpoint, " + EndpointVariable(service) + ", AWS_ENDPOINT_URL)"
		},
		Region:  "the client's region (AWS_REGION, config.WithRegion)",
		Profile: "AWS_PROFILE (config.WithSharedConfigProfile)",
	}
}

// Service is the SDK's ID of the service whose call returned err ("SQS",
// "DynamoDB", …), or "SQS" when err does not say.
func Service(err error) string {
	var op *smithy.OperationError
	if errors.As(err, &op) && op.ServiceID != "" {
		return op.ServiceID
	}
	return "SQS"
}

// Unreachable recognises an error that is about reaching AWS at all — no
// server at the endpoint, an unknown host, no credentials — rather than
// about one queue, and returns an error that says in one sentence what to
// do (in k's terms, for the service whose call failed) and unwraps to err. Every further call would fail the
// same way. The CLI and worker.New both explain these errors with it.
func Unreachable(err error, k Knobs) (error, bool) {
	if err == nil {
		return nil, false
	}
	service := Service(err)
	endpoint := k.Endpoint(service)
	where := "the " + service + " endpoint"
	var ue *url.Error
	if errors.As(err, &ue) {
		if u, perr := url.Parse(ue.URL); perr == nil && u.Host != "" {
			where = u.Scheme + "://" + u.Host
		}
	}
	var dns *net.DNSError
	var msg string
	switch {
	case errors.Is(err, syscall.ECONNREFUSED) || strings.Contains(err.Error(), "connection refused"):
		msg = "cannot reach " + where + " (connection refused): nothing listens there. For the local emulators, start them " +
			"(bash localstack/start.sh, or make emulators-start) and use the endpoint it prints; otherwise check " + endpoint
	case errors.As(err, &dns):
		msg = "cannot resolve " + dns.Name + ": check " + k.Region + " and " + endpoint
	case isCredentialsError(err):
		msg = "no AWS credentials found: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (any values, such as test and test, " +
			"for the local emulators), or choose a profile with " + k.Profile
	default:
		return nil, false
	}
	return &unreachable{msg: msg, err: err}, true
}

// unreachable is Unreachable's error: the advice, wrapping the cause.
type unreachable struct {
	msg string
	err error
}

func (e *unreachable) Error() string { return e.msg }
func (e *unreachable) Unwrap() error { return e.err }

// isCredentialsError reports whether err comes from the SDK failing to
// find credentials. The SDK has no error type for it; these are its words.
func isCredentialsError(err error) bool {
	s := err.Error()
	for _, w := range []string{"get credentials:", "failed to refresh cached credentials", "failed to retrieve credentials", "no valid providers in chain"} {
		if strings.Contains(s, w) {
			return true
		}
	}
	return false
}

package main

import (
	"errors"
	"net"
	"net/url"
	"strings"
	"syscall"
)

// awsProblem recognises an error that is about reaching AWS at all — no
// server at the endpoint, an unknown host, no credentials — rather than
// about one queue, and says in one sentence what to do. Such an error ends
// a command at once: every further call would fail the same way.
func awsProblem(err error) (string, bool) {
	if err == nil {
		return "", false
	}
	where := "the SQS endpoint"
	var ue *url.Error
	if errors.As(err, &ue) {
		if u, perr := url.Parse(ue.URL); perr == nil && u.Host != "" {
			where = u.Scheme + "://" + u.Host
		}
	}
	var dns *net.DNSError
	switch {
	case errors.Is(err, syscall.ECONNREFUSED) || strings.Contains(err.Error(), "connection refused"):
		return "cannot reach " + where + " (connection refused): nothing listens there. For the local emulators, start them " +
			"(bash localstack/start.sh, or make emulators-start) and use the endpoint it prints; otherwise check --endpoint-url, " +
			"AWS_ENDPOINT_URL_SQS and AWS_ENDPOINT_URL", true
	case errors.As(err, &dns):
		return "cannot resolve " + dns.Name + ": check --region and --endpoint-url (AWS_ENDPOINT_URL_SQS, AWS_ENDPOINT_URL)", true
	case isCredentialsError(err):
		return "no AWS credentials found: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (any values, such as test and test, " +
			"for the local emulators), or choose a profile with --profile or AWS_PROFILE", true
	}
	return "", false
}

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

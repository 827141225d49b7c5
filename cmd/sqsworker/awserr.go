package main

import "github.com/sqsworker/sqsworker/internal/sqserr"

// cliKnobs names the CLI's ways of choosing the endpoint, region and
// profile, for sqserr.Unreachable's advice: each service's endpoint by its
// own variable (see endpointFor).
func cliKnobs() sqserr.Knobs {
	return sqserr.Knobs{
		Endpoint: func(service string) string {
			if service == "DynamoDB" {
				return sqserr.EndpointVariable(service) + " (or --endpoint-url when that is not set) and AWS_ENDPOINT_URL"
			}
			return "--endpoint-url, " + sqserr.EndpointVariable(service) + " and AWS_ENDPOINT_URL"
		},
		Region:  "--region",
		Profile: "--profile or AWS_PROFILE",
	}
}

// awsProblem recognises an error that is about reaching AWS at all — no
// server at the endpoint, an unknown host, no credentials — rather than
// about one queue, and says in one sentence what to do. Such an error ends
// a command at once: every further call would fail the same way.
func awsProblem(err error) (string, bool) {
	if e, ok := sqserr.Unreachable(err, cliKnobs()); ok {
		return e.Error(), true
	}
	return "", false
}

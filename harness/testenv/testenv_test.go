package testenv

import (
	"strings"
	"testing"
)

func TestParseExports(t *testing.T) {
	got := parseExports("export AWS_ENDPOINT_URL_SQS=http://127.0.0.1:9324\nnoise\nexport AWS_REGION=${AWS_REGION:-us-east-1}\nexport SQSWORKER_SQS_BACKEND=fauxqs\n")
	if got["AWS_ENDPOINT_URL_SQS"] != "http://127.0.0.1:9324" || got[BackendEnv] != "fauxqs" {
		t.Fatalf("parseExports = %v", got)
	}
	if _, ok := got["AWS_REGION"]; ok {
		t.Fatal("shell defaults must not be taken literally")
	}
}

func TestIsLoopback(t *testing.T) {
	for url, want := range map[string]bool{
		"http://127.0.0.1:9324":               true,
		"http://localhost:4566":               true,
		"http://[::1]:8000":                   true,
		"https://sqs.us-east-1.amazonaws.com": false,
		"http://10.0.0.1:4566":                false,
	} {
		if got := isLoopback(url); got != want {
			t.Errorf("isLoopback(%q) = %v, want %v", url, got, want)
		}
	}
}

func TestUniqueNameIsUniqueAndShort(t *testing.T) {
	a, b := UniqueName("q"), UniqueName("q")
	if a == b || !strings.HasPrefix(a, "q-") {
		t.Fatalf("UniqueName gave %q and %q", a, b)
	}
	if n := UniqueName(strings.Repeat("x", 100)); len(n) > 75 {
		t.Fatalf("UniqueName too long: %d", len(n))
	}
}

func TestLocalAWSAnswers(t *testing.T) {
	c := SQS(t)
	if _, err := c.ListQueues(t.Context(), nil); err != nil {
		t.Fatalf("SQS endpoint %s does not answer: %v", Get(t).SQS, err)
	}
	d := DynamoDB(t)
	if _, err := d.ListTables(t.Context(), nil); err != nil {
		t.Fatalf("DynamoDB endpoint %s does not answer: %v", Get(t).DynamoDB, err)
	}
	t.Logf("local AWS: SQS %s (%s), DynamoDB %s", Get(t).SQS, Get(t).Backend, Get(t).DynamoDB)
}

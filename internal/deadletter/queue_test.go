package deadletter

import (
	"testing"
	"time"
)

func TestParseRedrivePolicyAcceptsStringCount(t *testing.T) {
	p, err := ParseRedrivePolicy(`{"deadLetterTargetArn":"arn:aws:sqs:us-east-1:1:q","maxReceiveCount":"4"}`)
	if err != nil || p.MaxReceiveCount != 4 || p.TargetARN != "arn:aws:sqs:us-east-1:1:q" {
		t.Errorf("ParseRedrivePolicy = %+v, %v", p, err)
	}
	if _, err := ParseRedrivePolicy(`{"maxReceiveCount":4}`); err == nil {
		t.Error("a policy without deadLetterTargetArn parsed")
	}
}

func TestHumanDuration(t *testing.T) {
	for d, want := range map[time.Duration]string{
		0: "0s", 4 * 24 * time.Hour: "4 days", 24 * time.Hour: "1 day", time.Hour: "1 hour", 6 * time.Hour: "6 hours",
		10 * time.Minute: "10m", 90 * time.Second: "1m30s", 150 * time.Minute: "2h30m", 3 * time.Second: "3s",
		500 * time.Millisecond: "500ms", time.Hour + 19*time.Minute + 45670*time.Millisecond: "1h19m46s",
	} {
		if got := HumanDuration(d); got != want {
			t.Errorf("HumanDuration(%v) = %q, want %q", d, got, want)
		}
	}
}

package localstack

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sqsworker/sqsworker/internal/deadletter"
	"github.com/sqsworker/sqsworker/internal/queuepolicy"
)

// stubAWSLocal is an awslocal that records its arguments (one call per
// line, arguments separated by \x1f) and answers the queries the init hook
// makes, so the hook runs here without LocalStack.
const stubAWSLocal = `#!/usr/bin/env bash
(IFS=$'\x1f'; printf '%s\n' "$*") >> "$AWSLOCAL_LOG"
args=" $* "
case "$args" in
  *" describe-table "*) exit 1 ;;
  *" --query TopicArn "*) echo "arn:aws:sns:us-east-1:000000000000:sqsworker-rental-orders" ;;
  *" --query QueueUrl "*)
    while [ $# -gt 0 ]; do [ "$1" = --queue-name ] && { echo "http://localhost:4566/000000000000/$2"; exit 0; }; shift; done ;;
esac
exit 0
`

// TestInitHookSendsValidJSON runs the LocalStack init hook against a stub
// awslocal and checks what it would create: every --attributes argument is
// JSON, the RedrivePolicies name the dead-letter queues, the queue policies
// let the example topic send (read as fanout's lint reads them), and the
// subscription of sqsworker-jobs gets its own dead-letter queue.
func TestInitHookSendsValidJSON(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "awslocal"), []byte(stubAWSLocal), 0o755); err != nil {
		t.Fatal(err)
	}
	log := filepath.Join(dir, "calls")
	cmd := exec.Command("bash", "init/ready.d/10-sqsworker.sh")
	cmd.Env = append(os.Environ(), "PATH="+dir+":"+os.Getenv("PATH"), "AWSLOCAL_LOG="+log, "AWS_DEFAULT_REGION=us-east-1")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("init hook: %v\n%s", err, out)
	}
	data, err := os.ReadFile(log)
	if err != nil {
		t.Fatal(err)
	}
	const topic = "arn:aws:sns:us-east-1:000000000000:sqsworker-rental-orders"
	granted := map[string]bool{}
	subscribed := false
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		args := strings.Split(line, "\x1f")
		get := func(flag string) string {
			for i, a := range args {
				if a == flag && i+1 < len(args) {
					return args[i+1]
				}
			}
			return ""
		}
		raw := get("--attributes")
		if raw == "" {
			continue
		}
		var attrs map[string]string
		if err := json.Unmarshal([]byte(raw), &attrs); err != nil {
			t.Errorf("%s %s: --attributes is not a JSON object of strings: %v\n%s", args[0], args[1], err, raw)
			continue
		}
		if rp := attrs["RedrivePolicy"]; rp != "" {
			var p struct {
				Target          string `json:"deadLetterTargetArn"`
				MaxReceiveCount *int   `json:"maxReceiveCount"`
			}
			if err := json.Unmarshal([]byte(rp), &p); err != nil || !strings.HasPrefix(p.Target, "arn:aws:sqs:us-east-1:000000000000:") {
				t.Errorf("RedrivePolicy %q: %v", rp, err)
			}
			// A queue's maxReceiveCount is setup's default, which doctor
			// accepts (a FIFO queue needs ten times the attempts).
			if name := get("--queue-name"); args[1] == "create-queue" {
				want := deadletter.DefaultMaxReceiveCount
				if strings.HasSuffix(name, ".fifo") {
					want = deadletter.DefaultFIFOMaxReceiveCount
				}
				if p.MaxReceiveCount == nil || *p.MaxReceiveCount != want {
					t.Errorf("queue %s: maxReceiveCount %v, want %d (sqsworker setup's, which doctor accepts)", name, p.MaxReceiveCount, want)
				}
			}
		}
		if pol := attrs["Policy"]; pol != "" {
			name := get("--queue-url")[strings.LastIndex(get("--queue-url"), "/")+1:]
			ok, err := queuepolicy.AllowsTopic(pol, "arn:aws:sqs:us-east-1:000000000000:"+name, topic)
			if err != nil || !ok {
				t.Errorf("policy of %s does not let the topic send: %v\n%s", name, err, pol)
			}
			granted[name] = true
		}
		if args[0] == "sns" && args[1] == "subscribe" {
			subscribed = get("--topic-arn") == topic && get("--protocol") == "sqs" &&
				get("--notification-endpoint") == "arn:aws:sqs:us-east-1:000000000000:sqsworker-jobs" &&
				strings.Contains(attrs["RedrivePolicy"], "sqsworker-jobs-fanout-dlq")
		}
	}
	if !granted["sqsworker-jobs"] || !granted["sqsworker-jobs-fanout-dlq"] || !subscribed {
		t.Errorf("granted %v, subscribed %v; want both queues granted and the subscription with its DLQ", granted, subscribed)
	}
}

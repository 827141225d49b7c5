package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/sqsworker/sqsworker/dlq"
	"github.com/sqsworker/sqsworker/harness/testenv"
	"github.com/sqsworker/sqsworker/internal/deadletter"
)

// TestIntegrationCommands runs the dlq commands against the local SQS
// emulator (fauxqs), which has no message move tasks: redrive must fall
// back to the manual move on its own.
func TestIntegrationCommands(t *testing.T) {
	c := testenv.SQS(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cli := emulatorCLI(t, ctx, c)
	name := testenv.UniqueName("cli")
	if code, out, errOut := cli("setup", name); code != exitOK {
		t.Fatalf("setup: exit %d\n%s%s", code, out, errOut)
	}
	target, err := dlq.Discover(ctx, c, mustURL(t, c, name))
	if err != nil {
		t.Fatal(err)
	}
	mover, err := deadletter.NewMover(c, deadletter.Target(target))
	if err != nil {
		t.Fatal(err)
	}
	for i := range 4 {
		if _, err := c.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(target.SourceURL), MessageBody: aws.String("job")}); err != nil {
			t.Fatal(err)
		}
		out, err := c.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(target.SourceURL), WaitTimeSeconds: 1,
			MessageAttributeNames: []string{"All"}, MessageSystemAttributeNames: []types.MessageSystemAttributeName{"All"}})
		if err != nil || len(out.Messages) != 1 {
			t.Fatalf("receive: %v", err)
		}
		errText := "timeout"
		if i == 3 {
			errText = "bad input"
		}
		if err := mover.Move(ctx, out.Messages[0], deadletter.Provenance{Error: errText}); err != nil {
			t.Fatal(err)
		}
	}

	if code, out, _ := cli("dlq", "ls", name); code != exitOK || !strings.Contains(out, name+"-dlq") {
		t.Errorf("ls: exit %d\n%s", code, out)
	}
	if code, out, _ := cli("dlq", "peek", name, "-n", "0"); code != exitOK || strings.Count(out, "error:") != 4 {
		t.Errorf("peek: exit %d\n%s", code, out)
	}
	// By the dead-letter queue's own name: fauxqs has no
	// ListDeadLetterSourceQueues, so the sources are found by a scan.
	if code, out, errOut := cli("dlq", "peek", name+"-dlq", "-n", "1"); code != exitOK || !strings.Contains(out, "dead-letter queue "+name+"-dlq of "+name+":") {
		t.Errorf("peek by DLQ name: exit %d\n%s%s", code, out, errOut)
	}
	if code, out, _ := cli("doctor", name+"-dlq"); code != exitOK || strings.Contains(out, "-dlq-dlq") || !strings.Contains(out, "is-dead-letter-queue") {
		t.Errorf("doctor of the DLQ: exit %d\n%s", code, out)
	}
	if code, out, errOut := cli("dlq", "redrive", name, "--error-contains", "timeout"); code != exitOK || !strings.Contains(out, "moved 3 messages") || !strings.Contains(out, "(manual)") {
		t.Errorf("redrive: exit %d\n%s%s", code, out, errOut)
	}
	if code, _, errOut := cli("dlq", "purge", name); code != exitNotConfirm {
		t.Errorf("purge without --yes: exit %d, %s", code, errOut)
	}
	if code, out, errOut := cli("dlq", "purge", name, "--yes"); code != exitOK || !strings.Contains(out, "purged") {
		t.Errorf("purge --yes: exit %d\n%s%s", code, out, errOut)
	}
	if counts, err := dlq.Count(ctx, c, target.DLQURL); err != nil || counts.Total() != 0 {
		t.Errorf("DLQ after purge: %+v, %v", counts, err)
	}
	if counts, err := dlq.Count(ctx, c, target.SourceURL); err != nil || counts.Visible != 3 {
		t.Errorf("source after redrive: %+v, %v", counts, err)
	}
}

func mustURL(t *testing.T, c *sqs.Client, name string) string {
	t.Helper()
	out, err := c.GetQueueUrl(context.Background(), &sqs.GetQueueUrlInput{QueueName: aws.String(name)})
	if err != nil {
		t.Fatal(err)
	}
	return aws.ToString(out.QueueUrl)
}

// TestIntegrationSetupTwiceChangesNothing is issue 18's first report on the
// emulator: a second setup without flags kept maxReceiveCount 60 and 7 days
// of retention no more. Now it says "no changes", and GetQueueAttributes
// shows that nothing changed.
func TestIntegrationSetupTwiceChangesNothing(t *testing.T) {
	c := testenv.SQS(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cli := emulatorCLI(t, ctx, c)
	name := testenv.UniqueName("cli-setup")
	if code, out, errOut := cli("setup", "--max-receive-count", "60", "--retention", "7d", name); code != exitOK || !strings.Contains(out, "created queue "+name) {
		t.Fatalf("first setup: exit %d\n%s%s", code, out, errOut)
	}
	attrs := func() map[string]string {
		t.Helper()
		all := map[string]string{}
		for _, q := range []string{name, name + "-dlq"} {
			out, err := c.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: aws.String(mustURL(t, c, q)), AttributeNames: []types.QueueAttributeName{types.QueueAttributeNameAll}})
			if err != nil {
				t.Fatal(err)
			}
			for _, k := range []string{"RedrivePolicy", "MessageRetentionPeriod", "VisibilityTimeout"} {
				all[q+" "+k] = out.Attributes[k]
			}
		}
		return all
	}
	before := attrs()
	code, out, errOut := cli("setup", name)
	if code != exitOK || !strings.Contains(out, "no changes: everything was already as asked") || !strings.Contains(out, "maxReceiveCount    60") {
		t.Fatalf("second setup: exit %d\n%s%s", code, out, errOut)
	}
	after := attrs()
	for k, v := range before {
		if after[k] != v {
			t.Errorf("%s changed from %q to %q", k, v, after[k])
		}
	}
	if !strings.Contains(before[name+" RedrivePolicy"], "60") || before[name+" MessageRetentionPeriod"] != "604800" {
		t.Errorf("first setup did not apply its flags: %v", before)
	}
}

// emulatorCLI returns a function that runs the command line against the
// emulator's SQS (c) and SNS.
func emulatorCLI(t *testing.T, ctx context.Context, c *sqs.Client) func(args ...string) (int, string, string) {
	sc := testenv.SNS(t)
	return func(args ...string) (int, string, string) {
		var out, errOut bytes.Buffer
		a := &app{stdin: strings.NewReader(""), stdout: &out, stderr: &errOut,
			newClient:  func(context.Context, awsFlags) (client, error) { return c, nil },
			newSNS:     func(context.Context, awsFlags) (snsClient, error) { return sc, nil },
			isTerminal: func(any) bool { return false }, now: time.Now}
		return a.run(ctx, args), out.String(), errOut.String()
	}
}

// TestIntegrationSetupTopicTwice: on the emulator, setup --topic twice
// changes nothing the second time and says so, and doctor finds the chain
// it made in order.
func TestIntegrationSetupTopicTwice(t *testing.T) {
	c := testenv.SQS(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cli := emulatorCLI(t, ctx, c)
	topic, queue := testenv.UniqueName("cli-topic"), testenv.UniqueName("cli-fanout")
	code, out, errOut := cli("setup", "--topic", topic, queue, "--raw")
	if code != exitOK || !strings.Contains(out, "created subscription ") || !strings.Contains(out, "created topic "+topic) {
		t.Fatalf("first setup: exit %d\n%s%s", code, out, errOut)
	}
	code, out, errOut = cli("setup", "--topic", topic, queue, "--raw")
	if code != exitOK || !strings.Contains(out, "no changes: everything was already as asked") {
		t.Errorf("second setup: exit %d\n%s%s", code, out, errOut)
	}
	if code, out, errOut := cli("doctor", queue, "--delivery", "raw"); code != exitOK || !strings.Contains(out, queue+": ok") {
		t.Errorf("doctor: exit %d\n%s%s", code, out, errOut)
	}
	if code, out, _ := cli("doctor", queue+"-fanout-dlq"); code != exitOK || !strings.Contains(out, "is-subscription-dlq") {
		t.Errorf("doctor of the fan-out DLQ: exit %d\n%s", code, out)
	}
}

package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/synctest"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sns"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"gopkg.in/yaml.v3"
)

// The fan-out commands (issue 14) against the SQS and SNS fakes.

func filterFile(t *testing.T) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "filter.json")
	if err := os.WriteFile(p, []byte(`{"order-status":["confirmed","canceled"]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestSetupTopicCommand(t *testing.T) {
	h := newHarness(t)
	args := []string{"setup", "--topic", "rental-orders", "billing", "--filter-policy", filterFile(t)}
	code, out, errOut := h.run(t, args...)
	if code != exitOK || errOut != "" {
		t.Fatalf("exit %d, stderr %q", code, errOut)
	}
	// The subscription ARN is random: stand it in.
	sub := strings.Fields(out[strings.Index(out, "\nsubscription  ")+len("\nsubscription  "):])[0]
	golden(t, "setup-topic-created", strings.ReplaceAll(out, sub, "SUBSCRIPTION-ARN"))

	code, out, _ = h.run(t, "setup", "--topic", "rental-orders", "billing")
	if code != exitOK || !strings.Contains(out, "no changes: everything was already as asked") {
		t.Errorf("second setup: exit %d\n%s", code, out)
	}
	code, out, _ = h.run(t, "setup", "--topic", "rental-orders", "billing", "--raw", "-o", "json")
	var res struct {
		TopicARN     string `json:"topicArn"`
		QueueURL     string `json:"queueUrl"`
		DLQURL       string `json:"dlqUrl"`
		FanoutDLQURL string `json:"fanoutDlqUrl"`
		FanoutDLQARN string `json:"fanoutDlqArn"`
		Subscription struct {
			ARN          string `json:"subscriptionArn"`
			Raw          bool   `json:"rawMessageDelivery"`
			FilterPolicy string `json:"filterPolicy"`
			DLQARN       string `json:"dlqArn"`
		} `json:"subscription"`
		Changed bool `json:"changed"`
		Changes []struct {
			Resource, Attribute, From, To string
		} `json:"changes"`
	}
	if err := json.Unmarshal([]byte(out), &res); code != exitOK || err != nil {
		t.Fatalf("json: exit %d, %v\n%s", code, err, out)
	}
	if res.TopicARN != "arn:aws:sns:us-east-1:000000000000:rental-orders" || !strings.HasSuffix(res.FanoutDLQURL, "/billing-fanout-dlq") ||
		res.Subscription.ARN != sub || !res.Subscription.Raw || res.Subscription.DLQARN != res.FanoutDLQARN || res.Subscription.FilterPolicy == "" ||
		!res.Changed || len(res.Changes) != 1 || res.Changes[0].Attribute != "RawMessageDelivery" || res.Changes[0].To != "true" {
		t.Errorf("json %+v", res)
	}
	if code, _, errOut := h.run(t, "setup", "orders", "--raw"); code != exitUsage || !strings.Contains(errOut, "--raw needs --topic") {
		t.Errorf("--raw without --topic: exit %d, %q", code, errOut)
	}
	// doctor checks the chain it made.
	if code, out, _ := h.run(t, "doctor", "billing", "--delivery", "raw"); code != exitOK || !strings.HasPrefix(out, "(checked against") || !strings.Contains(out, "billing: ok") {
		t.Errorf("doctor of the chain: exit %d\n%s", code, out)
	}
}

func TestDoctorChecksTheSubscriptions(t *testing.T) {
	h := newHarness(t)
	if code, _, errOut := h.run(t, "setup", "--topic", "rental-orders", "fulfilment"); code != exitOK {
		t.Fatal(errOut)
	}
	url := "https://sqs.us-east-1.amazonaws.com/000000000000/fulfilment"
	if _, err := h.fake.SetQueueAttributes(context.Background(), &sqs.SetQueueAttributesInput{QueueUrl: aws.String(url), Attributes: map[string]string{"Policy": ""}}); err != nil {
		t.Fatal(err)
	}
	code, out, _ := h.run(t, "doctor", "fulfilment", "--attempts", "4", "--delivery", "raw")
	if code != exitProblems {
		t.Errorf("exit %d", code)
	}
	golden(t, "doctor-fanout", out)
	if code, out, _ := h.run(t, "doctor", "fulfilment", "--attempts", "4", "--no-subscriptions"); code != exitOK || strings.Contains(out, "policy") {
		t.Errorf("--no-subscriptions: exit %d\n%s", code, out)
	}
	if code, _, _ := h.run(t, "doctor", "fulfilment", "--delivery", "json"); code != exitUsage {
		t.Errorf("--delivery json: exit %d", code)
	}
	code, out, _ = h.run(t, "doctor", "fulfilment", "--attempts", "4", "-o", "json")
	if code != exitProblems {
		t.Errorf("-o json: exit %d, want %d", code, exitProblems)
	}
	var reports []doctorReport
	if err := json.Unmarshal([]byte(out), &reports); err != nil || len(reports) != 1 {
		t.Fatalf("json: %v\n%s", err, out)
	}
	codes := map[string]bool{}
	for _, f := range reports[0].Findings {
		codes[f.Code] = true
	}
	if !codes["queue-policy-refuses-topic"] || !codes["envelope-delivery"] {
		t.Errorf("json findings %v", codes)
	}
}

func TestDLQCommandsOnASubscriptionDLQ(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t)
		if code, _, errOut := h.run(t, "setup", "--topic", "rental-orders", "fulfilment", "--raw"); code != exitOK {
			t.Fatal(errOut)
		}
		ctx := context.Background()
		url := "https://sqs.us-east-1.amazonaws.com/000000000000/fulfilment"
		out, _ := h.fake.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: aws.String(url), AttributeNames: []types.QueueAttributeName{types.QueueAttributeNamePolicy}})
		grant := out.Attributes["Policy"]
		setPolicy := func(p string) {
			if _, err := h.fake.SetQueueAttributes(ctx, &sqs.SetQueueAttributesInput{QueueUrl: aws.String(url), Attributes: map[string]string{"Policy": p}}); err != nil {
				t.Fatal(err)
			}
		}
		// SNS cannot deliver while the policy refuses it: to the subscription's DLQ.
		setPolicy("")
		for _, m := range []string{"order 1", "order 2", "order 3"} {
			if _, err := h.sns.Publish(ctx, &sns.PublishInput{TopicArn: aws.String("arn:aws:sns:us-east-1:000000000000:rental-orders"), Message: aws.String(m)}); err != nil {
				t.Fatal(err)
			}
		}
		setPolicy(grant)

		code, stdout, errOut := h.run(t, "dlq", "peek", "fulfilment-fanout-dlq")
		if code != exitOK || !strings.Contains(stdout, "dead-letter queue fulfilment-fanout-dlq of the subscription of fulfilment to topic rental-orders: about 3 messages") ||
			!strings.Contains(stdout, "not back to the topic") {
			t.Errorf("peek by name: exit %d\n%s%s", code, stdout, errOut)
		}
		code, stdout, _ = h.run(t, "dlq", "peek", "--fanout", "fulfilment", "-o", "json")
		if code != exitOK || !strings.Contains(stdout, `"subscriptionArn": "arn:aws:sns:us-east-1:000000000000:rental-orders:`) {
			t.Errorf("peek --fanout: exit %d\n%s", code, stdout)
		}
		code, _, errOut = h.run(t, "dlq", "redrive", "fulfilment-fanout-dlq", "--method", "move-task")
		if code != exitUsage || !strings.Contains(errOut, "use --method manual") {
			t.Errorf("move task: exit %d, %q", code, errOut)
		}
		code, stdout, errOut = h.run(t, "dlq", "redrive", "fulfilment-fanout-dlq", "--quiet")
		if code != exitOK || !strings.Contains(stdout, "moved 3 messages from fulfilment-fanout-dlq to fulfilment (manual)") {
			t.Errorf("redrive: exit %d\n%s%s", code, stdout, errOut)
		}
		if n := len(h.fake.Messages(url)); n != 3 {
			t.Errorf("fulfilment holds %d messages", n)
		}
		if st := h.sns.Stats(); st.Delivered != 0 {
			t.Errorf("the redrive published again: %+v", st)
		}
	})
}

// cfn is a parsed CloudFormation template, as far as the tests read it.
type cfn struct {
	Parameters map[string]any `yaml:"Parameters" json:"Parameters"`
	Conditions map[string]any `yaml:"Conditions" json:"Conditions"`
	Resources  map[string]struct {
		Type       string         `yaml:"Type" json:"Type"`
		Properties map[string]any `yaml:"Properties" json:"Properties"`
	} `yaml:"Resources" json:"Resources"`
	Outputs map[string]map[string]any `yaml:"Outputs" json:"Outputs"`
}

// refs collects every Ref and Fn::GetAtt target in v.
func refs(v any, into map[string]bool) {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			switch k {
			case "Ref":
				into[e.(string)] = true
			case "Fn::GetAtt":
				into[e.([]any)[0].(string)] = true
			}
			refs(e, into)
		}
	case []any:
		for _, e := range x {
			refs(e, into)
		}
	}
}

func getAttOf(v any) string {
	m, _ := v.(map[string]any)
	a, _ := m["Fn::GetAtt"].([]any)
	if len(a) != 2 {
		return ""
	}
	return a[0].(string) + "." + a[1].(string)
}

func TestTemplateStructure(t *testing.T) {
	h := newHarness(t)
	code, out, errOut := h.run(t, "template", "fulfilment", "--topic", "rental-orders", "--filter-policy", filterFile(t), "--max-receive-count", "8")
	if code != exitOK || errOut != "" {
		t.Fatalf("exit %d, %q", code, errOut)
	}
	golden(t, "template-fanout", out)
	var tpl cfn
	if err := yaml.Unmarshal([]byte(out), &tpl); err != nil {
		t.Fatalf("the template is not YAML: %v", err)
	}
	want := map[string]string{
		"Queue": "AWS::SQS::Queue", "DeadLetterQueue": "AWS::SQS::Queue", "FanoutDeadLetterQueue": "AWS::SQS::Queue",
		"Topic": "AWS::SNS::Topic", "Subscription": "AWS::SNS::Subscription", "QueuePolicy": "AWS::SQS::QueuePolicy",
		"DeadLetterQueueAlarm": "AWS::CloudWatch::Alarm", "FanoutDeadLetterQueueAlarm": "AWS::CloudWatch::Alarm",
	}
	for id, typ := range want {
		if tpl.Resources[id].Type != typ {
			t.Errorf("resource %s is %q, want %s", id, tpl.Resources[id].Type, typ)
		}
	}
	if len(tpl.Resources) != len(want) {
		t.Errorf("%d resources, want %d", len(tpl.Resources), len(want))
	}
	// Every reference resolves.
	used := map[string]bool{}
	refs(tpl.Resources, used)
	refs(tpl.Outputs, used)
	for r := range used {
		if _, ok := tpl.Resources[r]; !ok && tpl.Parameters[r] == nil && !strings.HasPrefix(r, "AWS::") {
			t.Errorf("reference to %s, which the template does not define", r)
		}
	}
	q := tpl.Resources["Queue"].Properties
	rp := q["RedrivePolicy"].(map[string]any)
	if getAttOf(rp["deadLetterTargetArn"]) != "DeadLetterQueue.Arn" || rp["maxReceiveCount"] != 8 || q["QueueName"] != "fulfilment" {
		t.Errorf("queue %v", q)
	}
	if r := tpl.Resources["DeadLetterQueue"].Properties["MessageRetentionPeriod"]; r != 1209600 {
		t.Errorf("DLQ retention %v", r)
	}
	s := tpl.Resources["Subscription"].Properties
	if s["Protocol"] != "sqs" || getAttOf(s["Endpoint"]) != "Queue.Arn" || getAttOf(s["RedrivePolicy"].(map[string]any)["deadLetterTargetArn"]) != "FanoutDeadLetterQueue.Arn" ||
		s["RawMessageDelivery"] != false || s["FilterPolicy"].(map[string]any)["order-status"].([]any)[1] != "canceled" {
		t.Errorf("subscription %v", s)
	}
	pd := tpl.Resources["QueuePolicy"].Properties["PolicyDocument"].(map[string]any)
	st := pd["Statement"].([]any)[0].(map[string]any)
	res := st["Resource"].([]any)
	if st["Principal"].(map[string]any)["Service"] != "sns.amazonaws.com" || st["Action"] != "sqs:SendMessage" ||
		getAttOf(res[0]) != "Queue.Arn" || getAttOf(res[1]) != "FanoutDeadLetterQueue.Arn" ||
		st["Condition"].(map[string]any)["ArnEquals"].(map[string]any)["aws:SourceArn"].(map[string]any)["Ref"] != "Topic" {
		t.Errorf("queue policy statement %v", st)
	}
	for alarm, queue := range map[string]string{"DeadLetterQueueAlarm": "DeadLetterQueue", "FanoutDeadLetterQueueAlarm": "FanoutDeadLetterQueue"} {
		a := tpl.Resources[alarm].Properties
		dim := a["Dimensions"].([]any)[0].(map[string]any)
		if a["MetricName"] != "ApproximateNumberOfMessagesVisible" || a["Namespace"] != "AWS/SQS" || a["Threshold"] != 0 ||
			a["ComparisonOperator"] != "GreaterThanThreshold" || getAttOf(dim["Value"]) != queue+".QueueName" {
			t.Errorf("alarm %s: %v", alarm, a)
		}
	}
	if !strings.Contains(out, "not NumberOfMessagesSent") || !strings.Contains(out, "own redrive moved there after maxReceiveCount receives") {
		t.Error("the template does not say why the alarms use ApproximateNumberOfMessagesVisible")
	}
	if _, ok := tpl.Conditions["HasAlarmTopic"]; !ok {
		t.Error("no HasAlarmTopic condition")
	}
}

func TestTemplateFIFOAndJSON(t *testing.T) {
	h := newHarness(t)
	code, out, errOut := h.run(t, "template", "ledger", "--topic", "rental-orders.fifo", "--raw", "-o", "json")
	if code != exitOK {
		t.Fatalf("exit %d, %q", code, errOut)
	}
	var tpl cfn
	if err := json.Unmarshal([]byte(out), &tpl); err != nil {
		t.Fatalf("not JSON: %v", err)
	}
	for _, id := range []string{"Queue", "DeadLetterQueue", "FanoutDeadLetterQueue"} {
		p := tpl.Resources[id].Properties
		if p["FifoQueue"] != true || !strings.HasSuffix(p["QueueName"].(string), ".fifo") {
			t.Errorf("%s: %v", id, p)
		}
	}
	if tpl.Resources["Topic"].Properties["FifoTopic"] != true || tpl.Resources["Subscription"].Properties["RawMessageDelivery"] != true ||
		tpl.Resources["Queue"].Properties["RedrivePolicy"].(map[string]any)["maxReceiveCount"] != float64(40) {
		t.Errorf("FIFO template %v", tpl.Resources)
	}
	// Without --topic: the queue pair and one alarm.
	code, out, _ = h.run(t, "template", "orders")
	var plain cfn
	if err := yaml.Unmarshal([]byte(out), &plain); code != exitOK || err != nil || len(plain.Resources) != 3 || plain.Resources["DeadLetterQueueAlarm"].Type == "" {
		t.Errorf("plain template: exit %d, %v, %v", code, err, plain.Resources)
	}
	for _, args := range [][]string{
		{"template", "orders", "--raw"},
		{"template", "orders.fifo", "--topic", "plain"},
		{"template", "bad name!"},
		{"template", "orders", "--topic", "t", "--filter-policy-scope", "Body"},
	} {
		if code, _, _ := h.run(t, args...); code != exitUsage {
			t.Errorf("%v: exit %d", args, code)
		}
	}
}

// A queue whose policy lets everyone send: doctor reports it, setup --topic
// adds the topic's statement and says the queue is open (text and JSON).
func TestSetupTopicOnAnOpenQueue(t *testing.T) {
	h := newHarness(t)
	if code, _, errOut := h.run(t, "setup", "billing"); code != exitOK {
		t.Fatal(errOut)
	}
	url := "https://sqs.us-east-1.amazonaws.com/000000000000/billing"
	open := `{"Version":"2012-10-17","Statement":[{"Sid":"anyone","Effect":"Allow","Principal":"*","Action":"sqs:SendMessage","Resource":"arn:aws:sqs:us-east-1:000000000000:billing"}]}`
	if _, err := h.fake.SetQueueAttributes(context.Background(), &sqs.SetQueueAttributesInput{QueueUrl: aws.String(url), Attributes: map[string]string{"Policy": open}}); err != nil {
		t.Fatal(err)
	}
	if code, out, _ := h.run(t, "doctor", "billing"); code != exitProblems || !strings.Contains(out, "queue-policy-open") {
		t.Errorf("doctor of an open queue: exit %d\n%s", code, out)
	}
	code, out, errOut := h.run(t, "setup", "--topic", "rental-orders", "billing")
	if code != exitOK || errOut != "" {
		t.Fatalf("exit %d, stderr %q", code, errOut)
	}
	sub := strings.Fields(out[strings.Index(out, "\nsubscription  ")+len("\nsubscription  "):])[0]
	golden(t, "setup-topic-open", strings.ReplaceAll(out, sub, "SUBSCRIPTION-ARN"))
	code, out, _ = h.run(t, "setup", "--topic", "rental-orders", "billing", "-o", "json")
	var res struct {
		Findings []struct{ Code, Fix string } `json:"findings"`
	}
	if err := json.Unmarshal([]byte(out), &res); code != exitOK || err != nil || len(res.Findings) != 1 || res.Findings[0].Code != "queue-policy-open" || res.Findings[0].Fix == "" {
		t.Errorf("json: exit %d, %v, %+v\n%s", code, err, res, out)
	}
}

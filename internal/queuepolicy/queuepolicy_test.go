package queuepolicy

import (
	"encoding/json"
	"strings"
	"testing"
)

const (
	queue = "arn:aws:sqs:us-east-1:111122223333:orders"
	topic = "arn:aws:sns:us-east-1:111122223333:rental-orders"
)

func TestAllowsTopic(t *testing.T) {
	for _, tc := range []struct {
		name, policy string
		want         bool
	}{
		{"empty", "", false},
		{"grant with source ARN", `{"Statement":[{"Effect":"Allow","Principal":{"Service":"sns.amazonaws.com"},"Action":"sqs:SendMessage","Resource":"` + queue + `","Condition":{"ArnEquals":{"aws:SourceArn":"` + topic + `"}}}]}`, true},
		{"single statement object", `{"Statement":{"Effect":"Allow","Principal":"*","Action":"SQS:*","Resource":"*"}}`, true},
		{"other topic", `{"Statement":[{"Effect":"Allow","Principal":{"Service":"sns.amazonaws.com"},"Action":"sqs:SendMessage","Resource":"` + queue + `","Condition":{"ArnEquals":{"aws:SourceArn":"` + topic + `-x"}}}]}`, false},
		{"wildcard topic", `{"Statement":[{"Effect":"Allow","Principal":{"Service":["sns.amazonaws.com"]},"Action":["sqs:SendMessage"],"Resource":"arn:aws:sqs:*:111122223333:*","Condition":{"ArnLike":{"aws:SourceArn":"arn:aws:sns:*:111122223333:*"}}}]}`, true},
		{"account principal only", `{"Statement":[{"Effect":"Allow","Principal":{"AWS":"arn:aws:iam::111122223333:root"},"Action":"sqs:*","Resource":"` + queue + `"}]}`, false},
		{"receive only", `{"Statement":[{"Effect":"Allow","Principal":"*","Action":"sqs:ReceiveMessage","Resource":"` + queue + `"}]}`, false},
		{"denied", `{"Statement":[{"Effect":"Allow","Principal":"*","Action":"sqs:*","Resource":"*"},{"Effect":"Deny","Principal":{"Service":"sns.amazonaws.com"},"Action":"sqs:SendMessage","Resource":"*"}]}`, false},
		{"unknown condition", `{"Statement":[{"Effect":"Allow","Principal":"*","Action":"sqs:SendMessage","Resource":"*","Condition":{"IpAddress":{"aws:SourceIp":"10.0.0.0/8"}}}]}`, false},
		{"source account", `{"Statement":[{"Effect":"Allow","Principal":{"Service":"sns.amazonaws.com"},"Action":"sqs:SendMessage","Resource":"*","Condition":{"StringEquals":{"aws:SourceAccount":"111122223333"}}}]}`, true},
	} {
		got, err := AllowsTopic(tc.policy, queue, topic)
		if err != nil || got != tc.want {
			t.Errorf("%s: AllowsTopic = %v, %v; want %v", tc.name, got, err, tc.want)
		}
	}
	if _, err := AllowsTopic("{", queue, topic); err == nil {
		t.Error("a policy that is not JSON gave no error")
	}
}

func TestGrantTopicAddsOneStatementAndKeepsOthers(t *testing.T) {
	existing := `{"Version":"2012-10-17","Id":"mine","Statement":[{"Sid":"consumers","Effect":"Allow","Principal":{"AWS":"arn:aws:iam::111122223333:role/worker"},"Action":"sqs:ReceiveMessage","Resource":"` + queue + `"}]}`
	p, changed, err := GrantTopic(existing, queue, topic)
	if err != nil || !changed {
		t.Fatalf("GrantTopic: %v, changed %v", err, changed)
	}
	if ok, _ := AllowsTopic(p, queue, topic); !ok {
		t.Errorf("granted policy does not allow the topic: %s", p)
	}
	if ok, _ := AllowsTopic(p, queue, topic+"-other"); ok {
		t.Errorf("granted policy allows any topic: %s", p)
	}
	var d struct {
		ID        string `json:"Id"`
		Statement []struct{ Sid string }
	}
	if err := json.Unmarshal([]byte(p), &d); err != nil || d.ID != "mine" || len(d.Statement) != 2 || d.Statement[0].Sid != "consumers" || d.Statement[1].Sid != "sqsworker-sns-rental-orders" {
		t.Errorf("policy %s", p)
	}
	again, changed, err := GrantTopic(p, queue, topic)
	if err != nil || changed || again != p {
		t.Errorf("second grant changed it: %v %v\n%s", changed, err, again)
	}
	if p, _, _ := GrantTopic("", queue, "arn:aws:sns:us-east-1:111122223333:orders.fifo"); !strings.Contains(p, `"Sid":"sqsworker-sns-orders-fifo"`) {
		t.Errorf("FIFO topic statement id: %s", p)
	}
}

func FuzzAllowsTopic(f *testing.F) {
	f.Add(`{"Statement":[{"Effect":"Allow","Principal":"*","Action":"sqs:*","Resource":"*"}]}`)
	f.Add(`{"Statement":{"Effect":"Deny"}}`)
	f.Fuzz(func(t *testing.T, policy string) {
		ok, err := AllowsTopic(policy, queue, topic)
		if err != nil && ok {
			t.Fatal("allowed with an error")
		}
		if err == nil {
			p, _, gerr := GrantTopic(policy, queue, topic)
			if gerr == nil {
				if ok, _ := AllowsTopic(p, queue, topic); !ok {
					t.Fatalf("GrantTopic's result does not allow the topic: %s", p)
				}
			}
		}
	})
}

func TestOpenStatements(t *testing.T) {
	for _, tc := range []struct {
		name, policy string
		want         []string
	}{
		{"empty", "", nil},
		{"everyone sends", `{"Statement":[{"Sid":"open","Effect":"Allow","Principal":"*","Action":"sqs:SendMessage","Resource":"` + queue + `"}]}`, []string{"open"}},
		{"everyone sqs:*, no Sid", `{"Statement":{"Effect":"Allow","Principal":{"AWS":"*"},"Action":"SQS:*","Resource":"*"}}`, []string{"statement 1"}},
		{"everyone, list principal", `{"Statement":[{"Sid":"a","Effect":"Allow","Principal":{"Service":"sns.amazonaws.com"},"Action":"sqs:SendMessage","Resource":"` + queue + `","Condition":{"ArnEquals":{"aws:SourceArn":"` + topic + `"}}},{"Effect":"Allow","Principal":{"AWS":["*"]},"Action":["sqs:ReceiveMessage","sqs:SendMessage"]}]}`, []string{"statement 2"}},
		{"everyone with a source ARN", `{"Statement":[{"Effect":"Allow","Principal":"*","Action":"sqs:SendMessage","Resource":"` + queue + `","Condition":{"ArnEquals":{"aws:SourceArn":"` + topic + `"}}}]}`, nil},
		{"everyone within an organisation", `{"Statement":[{"Effect":"Allow","Principal":"*","Action":"sqs:SendMessage","Resource":"*","Condition":{"StringEquals":{"aws:PrincipalOrgID":"o-1"}}}]}`, nil},
		{"everyone receives only", `{"Statement":[{"Effect":"Allow","Principal":"*","Action":"sqs:ReceiveMessage","Resource":"` + queue + `"}]}`, nil},
		{"another queue", `{"Statement":[{"Effect":"Allow","Principal":"*","Action":"sqs:SendMessage","Resource":"` + queue + `-dlq"}]}`, nil},
		{"SNS unconditioned", `{"Statement":[{"Effect":"Allow","Principal":{"Service":"sns.amazonaws.com"},"Action":"sqs:SendMessage","Resource":"` + queue + `"}]}`, nil},
		{"deny everyone", `{"Statement":[{"Effect":"Deny","Principal":"*","Action":"sqs:SendMessage","Resource":"` + queue + `"}]}`, nil},
	} {
		got, err := OpenStatements(tc.policy, queue)
		if err != nil || strings.Join(got, ",") != strings.Join(tc.want, ",") {
			t.Errorf("%s: OpenStatements = %q, %v; want %q", tc.name, got, err, tc.want)
		}
	}
	if _, err := OpenStatements("{", queue); err == nil {
		t.Error("a policy that is not JSON gave no error")
	}
}

// An open statement lets SNS deliver, but GrantTopic still adds the
// topic-scoped statement, so removing the open one keeps the fan-out
// working; the open statement is kept (removing it is the owner's call).
func TestGrantTopicScopesAnOpenPolicy(t *testing.T) {
	open := `{"Version":"2012-10-17","Statement":[{"Sid":"open","Effect":"Allow","Principal":"*","Action":"sqs:SendMessage","Resource":"` + queue + `"}]}`
	if ok, _ := AllowsTopic(open, queue, topic); !ok {
		t.Fatal("an open policy does not let the topic send")
	}
	p, changed, err := GrantTopic(open, queue, topic)
	if err != nil || !changed {
		t.Fatalf("GrantTopic on an open policy: %v, changed %v", err, changed)
	}
	if names, _ := OpenStatements(p, queue); len(names) != 1 || names[0] != "open" {
		t.Errorf("open statement not kept: %q in %s", names, p)
	}
	var d struct{ Statement []json.RawMessage }
	if err := json.Unmarshal([]byte(p), &d); err != nil || len(d.Statement) != 2 {
		t.Fatalf("policy %s", p)
	}
	closed, _ := json.Marshal(map[string]any{"Version": "2012-10-17", "Statement": d.Statement[1:]})
	if ok, _ := AllowsTopic(string(closed), queue, topic); !ok {
		t.Errorf("without the open statement the topic may not send: %s", closed)
	}
	if _, changed, _ := GrantTopic(p, queue, topic); changed {
		t.Error("a second grant changed the policy")
	}
}

package uniqueattr

import (
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
)

func TestParseRoundTripAndDescribe(t *testing.T) {
	c := Claim{Mode: ModeSettled, Token: "0123abcd", Key: "report/acct:42"} // a key may hold colons
	attrs := map[string]types.MessageAttributeValue{Name: {DataType: aws.String("String"), StringValue: aws.String(c.Value())}}
	got, ok := Parse(attrs)
	if !ok || got != c {
		t.Fatalf("Parse = %+v, %v; want %+v", got, ok, c)
	}
	if d := Describe(attrs, ""); !strings.HasPrefix(d, "report/acct:42 (until settled") {
		t.Errorf("Describe = %q", d)
	}
	for _, bad := range []string{"", "s", "s:tok", "s::key", "s:tok:"} {
		if _, ok := parseValue(bad); ok {
			t.Errorf("parseValue(%q) accepted", bad)
		}
	}
	envelope := `{"Type":"Notification","MessageId":"m-1","TopicArn":"arn:aws:sns:us-east-1:000000000000:reports","Message":"job",` +
		`"MessageAttributes":{"other":{"Type":"String","Value":"x"},"sqsworker.unique":{"Type":"String","Value":"` + c.Value() + `"}}}`
	if got, ok := ParseMessage(nil, envelope); !ok || got != c {
		t.Errorf("ParseMessage of an SNS envelope = %+v, %v; want %+v", got, ok, c)
	}
	sched := `{"sqsworker":"sqsworker.schedule/1","arn":"<aws.scheduler.schedule-arn>","time":"<aws.scheduler.scheduled-time>","body":"job",` +
		`"attributes":{"other":{"t":"String","s":"x"},"sqsworker.unique":{"t":"String","s":"` + c.Value() + `"}}}`
	if got, ok := ParseMessage(nil, sched); !ok || got != c {
		t.Errorf("ParseMessage of a schedule's envelope = %+v, %v; want %+v", got, ok, c)
	}
	for _, body := range []string{"job", `{"sqsworker":"sqsworker.schedule/1","body":"job"}`, `{"Type":"Other","MessageAttributes":{"sqsworker.unique":{"Type":"String","Value":"s:t:k"}}}`, `{"sqsworker.unique": 1}`} {
		if got, ok := ParseMessage(nil, body); ok {
			t.Errorf("ParseMessage(nil, %q) = %+v", body, got)
		}
	}
	if d := Describe(nil, ""); d != "" {
		t.Errorf("Describe of no message = %q", d)
	}
}

package schedule

import (
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
)

func TestStripRelay(t *testing.T) {
	user := types.MessageAttributeValue{DataType: aws.String("String"), StringValue: aws.String("v")}
	attrs := map[string]types.MessageAttributeValue{
		AttemptsAttribute: AttemptsValue(3),
		OriginAttribute:   OriginValue("first"),
		Attribute:         user, // a due time is not the relay's: it stays
		"tenant":          user,
	}
	got := StripRelay(attrs)
	if len(got) != 2 || got["tenant"].StringValue == nil || got[Attribute].StringValue == nil {
		t.Errorf("StripRelay = %v; want the due time and the user's attribute", got)
	}
	if Attempts(got) != 0 || Origin(got) != "" {
		t.Errorf("the stripped attributes still carry attempts %d, origin %q", Attempts(got), Origin(got))
	}
	if len(attrs) != 4 {
		t.Errorf("StripRelay changed its argument: %v", attrs)
	}
	if got := StripRelay(map[string]types.MessageAttributeValue{OriginAttribute: OriginValue("x")}); got != nil {
		t.Errorf("StripRelay of relay attributes only = %v, want nil", got)
	}
}

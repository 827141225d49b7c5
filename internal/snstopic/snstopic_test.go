package snstopic

import "testing"

func TestParse(t *testing.T) {
	for _, s := range []string{"arn:aws:sns:us-east-1:000000000000:rental-orders", "arn:aws-cn:sns:cn-north-1:123456789012:ledger.fifo"} {
		a, err := Parse(s)
		if err != nil || a.String() != s {
			t.Errorf("Parse(%s) = %+v, %v; want it back as it was", s, a, err)
		}
	}
	if a, _ := Parse("arn:aws:sns:us-east-1:000000000000:ledger.fifo"); !a.FIFO() || a.Name != "ledger.fifo" || a.Account != "000000000000" || a.Region != "us-east-1" {
		t.Errorf("FIFO topic parsed as %+v", a)
	}
	for _, s := range []string{"", "rental-orders", "arn:aws:sqs:us-east-1:000000000000:jobs", "arn:aws:sns:us-east-1:000000000000", "arn:aws:sns::000000000000:t", "arn:aws:sns:us-east-1:0:t:x"} {
		if _, err := Parse(s); err == nil {
			t.Errorf("Parse(%q) accepted it", s)
		}
	}
}

package settle

import (
	"testing"
	"time"

	"github.com/sqsworker/sqsworker/retry"
)

func TestMaxDeliveries(t *testing.T) {
	for _, tc := range []struct {
		p    retry.Policy
		want int
	}{
		{retry.DefaultDeliveryPolicy(), 4},
		{retry.PolicyFunc(func(int) (time.Duration, bool) { return 0, false }), 1},
		{retry.PolicyFunc(func(int) (time.Duration, bool) { return time.Second, true }), 1000},
	} {
		if got := maxDeliveries(tc.p); got != tc.want {
			t.Errorf("maxDeliveries = %d, want %d", got, tc.want)
		}
	}
}

package sqslimit

import (
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
)

func TestMessageSizeCountsNamesTypesAndValues(t *testing.T) {
	attrs := map[string]types.MessageAttributeValue{
		"a":   {DataType: aws.String("String"), StringValue: aws.String("xyz")},  // 1 + 6 + 3
		"bin": {DataType: aws.String("Binary"), BinaryValue: []byte{1, 2, 3, 4}}, // 3 + 6 + 4
	}
	if got, want := MessageSize("hello", attrs), 5+10+13; got != want {
		t.Errorf("MessageSize = %d, want %d", got, want)
	}
}

func TestFit(t *testing.T) {
	sizes := func(s ...int) func(int) int { return func(i int) int { return s[i] } }
	for _, tc := range []struct {
		name  string
		sizes []int
		max   int
		want  int
	}{
		{"empty", nil, 100, 0},
		{"ten at most", []int{1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1}, 100, 10},
		{"bytes", []int{40, 40, 40}, 100, 2},
		{"exactly the limit", []int{50, 50, 1}, 100, 2},
		{"oversized alone", []int{150, 1}, 100, 1},
		{"oversized after others", []int{10, 150}, 100, 1},
	} {
		if got := Fit(len(tc.sizes), tc.max, sizes(tc.sizes...)); got != tc.want {
			t.Errorf("%s: Fit = %d, want %d", tc.name, got, tc.want)
		}
	}
}

func TestBilledRequests(t *testing.T) {
	for _, c := range []struct{ payload, chunk int }{
		{0, 0}, {1, 0}, {64 << 10, 0}, {64<<10 + 1, 0}, {256 << 10, 0}, {1 << 20, 0}, {5000, 1000}, {5001, 1000},
	} {
		want := map[[2]int]int64{
			{0, 0}: 1, {1, 0}: 1, {64 << 10, 0}: 1, {64<<10 + 1, 0}: 2, {256 << 10, 0}: 4, {1 << 20, 0}: 16, {5000, 1000}: 5, {5001, 1000}: 6,
		}[[2]int{c.payload, c.chunk}]
		if got := BilledRequests(c.payload, c.chunk); got != want {
			t.Errorf("BilledRequests(%d, %d) = %d, want %d", c.payload, c.chunk, got, want)
		}
	}
}

func TestCapAndVisibilitySeconds(t *testing.T) {
	for d, want := range map[time.Duration]time.Duration{
		-time.Second: 0, 0: 0, time.Second: time.Second,
		12 * time.Hour: 12 * time.Hour, 13 * time.Hour: 12 * time.Hour,
	} {
		if got := CapVisibility(d); got != want {
			t.Errorf("CapVisibility(%v) = %v, want %v", d, got, want)
		}
	}
	for d, want := range map[time.Duration]int32{
		-time.Second: 0, 0: 0, time.Nanosecond: 1, 999 * time.Millisecond: 1, time.Second: 1,
		1500 * time.Millisecond: 2, 20 * time.Second: 20, 12 * time.Hour: 43200, 100 * time.Hour: 43200,
	} {
		if got := VisibilitySeconds(d); got != want {
			t.Errorf("VisibilitySeconds(%v) = %d, want %d", d, got, want)
		}
	}
}

package schedule

import (
	"errors"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
)

func TestAttributeRoundTrip(t *testing.T) {
	due := time.Date(2027, 3, 1, 9, 30, 0, 123456789, time.FixedZone("CET", 3600))
	v := Value(due)
	if got := aws.ToString(v.StringValue); got != "2027-03-01T08:30:00.123Z" {
		t.Errorf("Value = %q, want UTC with milliseconds", got)
	}
	got, ok, err := Parse(map[string]types.MessageAttributeValue{Attribute: v})
	if err != nil || !ok {
		t.Fatalf("Parse = %v, %v, %v", got, ok, err)
	}
	if want := due.Truncate(time.Millisecond); !got.Equal(want) {
		t.Errorf("Parse = %v, want %v", got, want)
	}
}

func TestParse(t *testing.T) {
	str := func(dt, s string) map[string]types.MessageAttributeValue {
		return map[string]types.MessageAttributeValue{Attribute: {DataType: aws.String(dt), StringValue: aws.String(s)}}
	}
	for _, tc := range []struct {
		name    string
		attrs   map[string]types.MessageAttributeValue
		ok, bad bool
	}{
		{"absent", map[string]types.MessageAttributeValue{"other": {DataType: aws.String("String"), StringValue: aws.String("x")}}, false, false},
		{"nil map", nil, false, false},
		{"written by Value", str("String", "2026-01-02T03:04:05.000Z"), true, false},
		{"offset and nanoseconds", str("String", "2026-01-02T03:04:05.123456789+02:00"), true, false},
		{"custom string type", str("String.time", "2026-01-02T03:04:05Z"), true, false},
		{"number type", str("Number", "1767322800000"), false, true},
		{"binary", map[string]types.MessageAttributeValue{Attribute: {DataType: aws.String("Binary"), BinaryValue: []byte("x")}}, false, true},
		{"not a time", str("String", "tomorrow"), false, true},
		{"date only", str("String", "2026-01-02"), false, true},
		{"too long", str("String", "2026-01-02T03:04:05.000000000000000000000000000000000000000000000Z"), false, true},
	} {
		_, ok, err := Parse(tc.attrs)
		if ok != tc.ok || (err != nil) != tc.bad {
			t.Errorf("%s: Parse ok=%v err=%v, want ok=%v error=%v", tc.name, ok, err, tc.ok, tc.bad)
		}
		if err != nil && !errors.Is(err, ErrInvalid) {
			t.Errorf("%s: error %v does not wrap ErrInvalid", tc.name, err)
		}
	}
}

func TestSend(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		in    time.Duration
		delay time.Duration
		attr  bool
	}{
		{-time.Hour, 0, false},
		{0, 0, false},
		{1500 * time.Millisecond, 2 * time.Second, false}, // rounded up: never early
		{15 * time.Minute, 15 * time.Minute, false},
		{16 * time.Minute, time.Minute, true}, // first receive at due-15m
		{20*time.Minute + 500*time.Millisecond, 5*time.Minute + time.Second, true},
		{48 * time.Hour, 15 * time.Minute, true},
		{400 * 24 * time.Hour, 15 * time.Minute, true},
	} {
		d, attr := Send(now.Add(tc.in), now)
		if d != tc.delay || attr != tc.attr {
			t.Errorf("Send(now+%v) = %v, %v; want %v, %v", tc.in, d, attr, tc.delay, tc.attr)
		}
	}
}

package schedule

import (
	"testing"
	"time"
)

// FuzzParseValue feeds arbitrary attribute values to the parser: it must
// never panic, and whatever it accepts must survive Format and ParseValue
// unchanged (to the millisecond), since a resent copy carries the value on.
func FuzzParseValue(f *testing.F) {
	for _, s := range []string{
		"2026-01-02T03:04:05.000Z", "2026-01-02T03:04:05Z", "2026-01-02T03:04:05.123456789+02:00",
		"9999-12-31T23:59:59.999Z", "0000-01-01T00:00:00Z", "2026-13-02T03:04:05Z", "", "null", "1767322800000",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		due, err := ParseValue(s)
		if err != nil {
			return
		}
		again, err := ParseValue(Format(due))
		if err != nil {
			t.Fatalf("ParseValue(%q) = %v, but its Format %q does not parse: %v", s, due, Format(due), err)
		}
		if want := due.Truncate(time.Millisecond); !again.Equal(want) {
			t.Fatalf("round trip of %q: %v, want %v", s, again, want)
		}
	})
}

package schedules

import (
	"testing"
	"time"
)

// AWS's documented cron examples (EventBridge Scheduler user guide,
// "Cron-based schedules") and when they fire next.
func TestCronDocumentedExamples(t *testing.T) {
	from := time.Date(2026, 3, 4, 9, 7, 0, 0, time.UTC) // a Wednesday
	cases := []struct{ expr, want string }{
		{"cron(0 10 * * ? *)", "2026-03-04T10:00:00Z"},           // 10:00 every day
		{"cron(15 12 * * ? *)", "2026-03-04T12:15:00Z"},          // 12:15 every day
		{"cron(0 18 ? * MON-FRI *)", "2026-03-04T18:00:00Z"},     // 18:00 on weekdays
		{"cron(0 8 1 * ? *)", "2026-04-01T08:00:00Z"},            // 8:00 on the first of the month
		{"cron(0/15 * * * ? *)", "2026-03-04T09:15:00Z"},         // every 15 minutes
		{"cron(0/10 * ? * MON-FRI *)", "2026-03-04T09:10:00Z"},   // every 10 minutes on weekdays
		{"cron(0/5 8-17 ? * MON-FRI *)", "2026-03-04T09:10:00Z"}, // every 5 minutes, 8:00-17:55, weekdays
		{"cron(0 9 ? * 2#1 *)", "2026-04-06T09:00:00Z"},          // first Monday of the month
		{"cron(0 9 L * ? *)", "2026-03-31T09:00:00Z"},            // last day of the month
		{"cron(0 9 ? * 6L *)", "2026-03-27T09:00:00Z"},           // last Friday
		{"cron(0 9 1W * ? *)", "2026-04-01T09:00:00Z"},           // weekday nearest the 1st (Wed)
		{"cron(0 9 LW * ? *)", "2026-03-31T09:00:00Z"},           // last weekday of the month (Tue)
		{"cron(0 9 15W * ? *)", "2026-03-16T09:00:00Z"},          // 15th is a Sunday: Monday 16th
		{"cron(0 0 1 JAN ? 2027)", "2027-01-01T00:00:00Z"},       // once, in a given year
		{"cron(0 0 29 FEB ? 2027-2030)", "2028-02-29T00:00:00Z"}, // leap day
		{"cron(30 9,21 ? * SUN,SAT *)", "2026-03-07T09:30:00Z"},  // weekends
	}
	for _, c := range cases {
		e, err := parseExpr(c.expr)
		if err != nil {
			t.Fatalf("%s: %v", c.expr, err)
		}
		got, ok := e.cron.next(from, time.UTC)
		if !ok || got.Format(time.RFC3339) != c.want {
			t.Errorf("%s after %s: got %s (%v), want %s", c.expr, from.Format(time.RFC3339), got.Format(time.RFC3339), ok, c.want)
		}
	}
}

func TestExpressionsRefused(t *testing.T) {
	for _, s := range []string{
		"cron(0 10 * * *)", "cron(0 10 * * * *)", "cron(0 10 ? * ? *)", "cron(60 10 * * ? *)",
		"cron(0 24 * * ? *)", "cron(0 1 32 * ? *)", "cron(0 1 ? * 8 *)", "cron(0 1 ? * 2#6 *)",
		"cron(0 1 5-2 * ? *)", "cron(0 1 * * ? 1969)", "rate(0 minutes)", "rate(5 weeks)", "rate(five minutes)",
		"at(2026-13-01T00:00:00)", "every day", "",
	} {
		if _, err := parseExpr(s); err == nil {
			t.Errorf("%q: accepted, want refused", s)
		}
	}
}

// FuzzCron checks that any expression the parser accepts yields ticks
// after the given time, on the minute, whose wall clock matches the fields.
func FuzzCron(f *testing.F) {
	for _, s := range []string{"0 10 * * ? *", "0/5 8-17 ? * MON-FRI *", "0 9 ? * 2#1 *", "0 9 L * ? *", "0 9 ? * 6L *", "0 9 15W * ? *", "30 2 * * ? *", "* * ? * L 2026"} {
		f.Add(s, int64(1772600000), "Europe/Paris")
	}
	f.Fuzz(func(t *testing.T, s string, unix int64, tz string) {
		c, err := parseCron(s)
		if err != nil {
			return
		}
		loc, err := time.LoadLocation(tz)
		if err != nil || tz == "Local" {
			loc = time.UTC
		}
		from := time.Unix(unix%(4e9), 0)
		got, ok := c.next(from, loc)
		if !ok {
			return
		}
		if !got.After(from) || got.Second() != 0 {
			t.Fatalf("cron(%s) after %s: %s", s, from, got)
		}
		l := got.In(loc)
		if c.minute&(1<<l.Minute()) == 0 || c.hour&(1<<l.Hour()) == 0 || c.month&(1<<int(l.Month())) == 0 || !c.year(l.Year()) || !c.dayMatches(l.Year(), l.Month(), l.Day()) {
			t.Fatalf("cron(%s) after %s: %s does not match its fields", s, from, l)
		}
	})
}

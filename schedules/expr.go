package schedules

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// expr is a parsed schedule expression: exactly one of cron, rate and at
// is set.
type expr struct {
	cron *cronExpr
	rate time.Duration
	at   *wall
}

// wall is a wall-clock time in a schedule's time zone, to the second.
type wall struct {
	year, month, day, hour, minute, second int
}

func (w wall) naive() time.Time {
	return time.Date(w.year, time.Month(w.month), w.day, w.hour, w.minute, w.second, 0, time.UTC)
}

func wallOf(t time.Time) wall {
	return wall{t.Year(), int(t.Month()), t.Day(), t.Hour(), t.Minute(), t.Second()}
}

// instant returns the earliest instant at which loc's clocks show w, and
// false when they never do (w falls in a spring-forward gap). A wall time
// that occurs twice (fall back) maps to its first occurrence.
func (w wall) instant(loc *time.Location) (time.Time, bool) {
	n := w.naive()
	var best time.Time
	found := false
	seen := map[int]bool{}
	for _, probe := range []time.Time{n.Add(-26 * time.Hour), n.Add(-2 * time.Hour), n, n.Add(2 * time.Hour), n.Add(26 * time.Hour)} {
		_, off := probe.In(loc).Zone()
		if seen[off] {
			continue
		}
		seen[off] = true
		t := n.Add(-time.Duration(off) * time.Second)
		if wallOf(t.In(loc)) != w {
			continue
		}
		if !found || t.Before(best) {
			best, found = t, true
		}
	}
	return best, found
}

// parseExpr parses an EventBridge Scheduler schedule expression:
// cron(…) with six fields, rate(value unit) or at(yyyy-mm-ddThh:mm:ss).
func parseExpr(s string) (expr, error) {
	s = strings.TrimSpace(s)
	switch {
	case strings.HasPrefix(s, "cron(") && strings.HasSuffix(s, ")"):
		c, err := parseCron(s[len("cron(") : len(s)-1])
		if err != nil {
			return expr{}, err
		}
		return expr{cron: c}, nil
	case strings.HasPrefix(s, "rate(") && strings.HasSuffix(s, ")"):
		d, err := parseRate(s[len("rate(") : len(s)-1])
		if err != nil {
			return expr{}, err
		}
		return expr{rate: d}, nil
	case strings.HasPrefix(s, "at(") && strings.HasSuffix(s, ")"):
		t, err := time.Parse("2006-01-02T15:04:05", s[len("at("):len(s)-1])
		if err != nil {
			return expr{}, fmt.Errorf("at(): %q is not a time of the form yyyy-mm-ddThh:mm:ss (e.g. at(2026-03-01T09:30:00)); the time is read in the schedule's time zone", s)
		}
		w := wallOf(t)
		return expr{at: &w}, nil
	}
	return expr{}, fmt.Errorf("%q is not a schedule expression; write cron(minutes hours day-of-month month day-of-week year), rate(value unit) or at(yyyy-mm-ddThh:mm:ss)", s)
}

func parseRate(s string) (time.Duration, error) {
	f := strings.Fields(s)
	if len(f) != 2 {
		return 0, fmt.Errorf("rate(%s): write rate(value unit), e.g. rate(5 minutes)", s)
	}
	n, err := strconv.Atoi(f[0])
	if err != nil || n <= 0 || n > 1_000_000 {
		return 0, fmt.Errorf("rate(%s): the value must be a positive whole number, e.g. rate(5 minutes)", s)
	}
	var unit time.Duration
	switch f[1] {
	case "minute", "minutes":
		unit = time.Minute
	case "hour", "hours":
		unit = time.Hour
	case "day", "days":
		unit = 24 * time.Hour // a 24-hour duration, as AWS documents: DST does not stretch it
	default:
		return 0, fmt.Errorf("rate(%s): unit %q unknown; use minutes, hours or days", s, f[1])
	}
	return time.Duration(n) * unit, nil
}

// cronExpr is AWS's six-field cron: minutes hours day-of-month month
// day-of-week year. Day-of-week numbers run 1 (SUN) to 7 (SAT).
type cronExpr struct {
	minute, hour, month uint64 // bit sets
	years               [4]uint64
	dom                 domSpec
	dow                 dowSpec
}

type domSpec struct {
	any      bool   // '?'
	set      uint64 // bit per day 1..31
	last     bool   // L
	lastWeek bool   // LW
	weekday  int    // nW (0: none)
}

type dowSpec struct {
	any  bool   // '?'
	set  uint64 // bit per day 1..7
	last int    // nL: last n-day of the month (0: none)
	nth  [2]int // d#k: k-th d-day of the month (d 0: none)
}

var monthNames = map[string]int{"JAN": 1, "FEB": 2, "MAR": 3, "APR": 4, "MAY": 5, "JUN": 6, "JUL": 7, "AUG": 8, "SEP": 9, "OCT": 10, "NOV": 11, "DEC": 12}
var dayNames = map[string]int{"SUN": 1, "MON": 2, "TUE": 3, "WED": 4, "THU": 5, "FRI": 6, "SAT": 7}

const minYear, maxYear = 1970, 2199

func parseCron(s string) (*cronExpr, error) {
	f := strings.Fields(s)
	if len(f) != 6 {
		return nil, fmt.Errorf("cron(%s): %d fields; AWS's cron has six: minutes hours day-of-month month day-of-week year, e.g. cron(0 9 ? * MON-FRI *)", s, len(f))
	}
	c := &cronExpr{}
	var err error
	bad := func(field string, e error) error {
		return fmt.Errorf("cron(%s): %s: %v", s, field, e)
	}
	if c.minute, err = parseSet(f[0], 0, 59, nil); err != nil {
		return nil, bad("minutes", err)
	}
	if c.hour, err = parseSet(f[1], 0, 23, nil); err != nil {
		return nil, bad("hours", err)
	}
	if c.month, err = parseSet(f[3], 1, 12, monthNames); err != nil {
		return nil, bad("month", err)
	}
	if err = c.parseYears(f[5]); err != nil {
		return nil, bad("year", err)
	}
	if c.dom, err = parseDOM(f[2]); err != nil {
		return nil, bad("day-of-month", err)
	}
	if c.dow, err = parseDOW(f[4]); err != nil {
		return nil, bad("day-of-week", err)
	}
	if c.dom.any == c.dow.any {
		return nil, fmt.Errorf("cron(%s): exactly one of day-of-month and day-of-week must be '?' (AWS cannot take both); e.g. cron(0 9 * * ? *) or cron(0 9 ? * MON *)", s)
	}
	return c, nil
}

func (c *cronExpr) parseYears(s string) error {
	for _, part := range strings.Split(s, ",") {
		lo, hi, step, err := parseRange(part, minYear, maxYear, nil)
		if err != nil {
			return err
		}
		for y := lo; y <= hi; y += step {
			i := y - minYear
			c.years[i/64] |= 1 << (i % 64)
		}
	}
	return nil
}

func (c *cronExpr) year(y int) bool {
	if y < minYear || y > maxYear {
		return false
	}
	i := y - minYear
	return c.years[i/64]&(1<<(i%64)) != 0
}

func parseSet(s string, min, max int, names map[string]int) (uint64, error) {
	var set uint64
	for _, part := range strings.Split(s, ",") {
		lo, hi, step, err := parseRange(part, min, max, names)
		if err != nil {
			return 0, err
		}
		for v := lo; v <= hi; v += step {
			set |= 1 << v
		}
	}
	return set, nil
}

// parseRange parses *, n, a-b, */k, n/k and a-b/k.
func parseRange(s string, min, max int, names map[string]int) (lo, hi, step int, err error) {
	step = 1
	base := s
	if i := strings.IndexByte(s, '/'); i >= 0 {
		base = s[:i]
		step, err = strconv.Atoi(s[i+1:])
		if err != nil || step <= 0 || step > max-min+1 {
			return 0, 0, 0, fmt.Errorf("%q: the step after / must be a whole number from 1 to %d", s, max-min+1)
		}
	}
	num := func(v string) (int, error) {
		if n, ok := names[strings.ToUpper(v)]; ok {
			return n, nil
		}
		n, err := strconv.Atoi(v)
		if err != nil || n < min || n > max {
			return 0, fmt.Errorf("%q: %q is not a value from %d to %d", s, v, min, max)
		}
		return n, nil
	}
	switch {
	case base == "*":
		lo, hi = min, max
	case strings.Contains(base, "-"):
		a, b, _ := strings.Cut(base, "-")
		if lo, err = num(a); err != nil {
			return
		}
		if hi, err = num(b); err != nil {
			return
		}
		if lo > hi {
			return 0, 0, 0, fmt.Errorf("%q: the range runs backwards; write the smaller value first", s)
		}
	default:
		if lo, err = num(base); err != nil {
			return
		}
		hi = lo
		if step != 1 {
			hi = max // n/k: from n every k
		}
	}
	return lo, hi, step, nil
}

func parseDOM(s string) (domSpec, error) {
	switch {
	case s == "?":
		return domSpec{any: true}, nil
	case s == "L":
		return domSpec{last: true}, nil
	case s == "LW":
		return domSpec{lastWeek: true}, nil
	case strings.HasSuffix(s, "W"):
		n, err := strconv.Atoi(s[:len(s)-1])
		if err != nil || n < 1 || n > 31 {
			return domSpec{}, fmt.Errorf("%q: W follows one day from 1 to 31 (e.g. 15W, the weekday nearest the 15th)", s)
		}
		return domSpec{weekday: n}, nil
	}
	set, err := parseSet(s, 1, 31, nil)
	return domSpec{set: set}, err
}

func parseDOW(s string) (dowSpec, error) {
	day := func(v string) (int, error) {
		if n, ok := dayNames[strings.ToUpper(v)]; ok {
			return n, nil
		}
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 7 {
			return 0, fmt.Errorf("%q: %q is not a day of the week: 1-7 (1 is Sunday) or SUN-SAT", s, v)
		}
		return n, nil
	}
	switch {
	case s == "?":
		return dowSpec{any: true}, nil
	case s == "L":
		return dowSpec{set: 1 << 7}, nil // L alone: the last day of the week, Saturday
	case strings.Contains(s, "#"):
		a, b, _ := strings.Cut(s, "#")
		d, err := day(a)
		if err != nil {
			return dowSpec{}, err
		}
		k, err := strconv.Atoi(b)
		if err != nil || k < 1 || k > 5 {
			return dowSpec{}, fmt.Errorf("%q: # takes the week of the month, 1 to 5 (e.g. 3#2, the second Tuesday)", s)
		}
		return dowSpec{nth: [2]int{d, k}}, nil
	case len(s) > 1 && strings.HasSuffix(s, "L"):
		d, err := day(s[:len(s)-1])
		if err != nil {
			return dowSpec{}, err
		}
		return dowSpec{last: d}, nil
	}
	set, err := parseSet(s, 1, 7, dayNames)
	return dowSpec{set: set}, err
}

func daysIn(y int, m time.Month) int {
	return time.Date(y, m+1, 0, 0, 0, 0, 0, time.UTC).Day()
}

// dayMatches reports whether the civil date y-m-d matches the day fields.
func (c *cronExpr) dayMatches(y int, m time.Month, d int) bool {
	n := daysIn(y, m)
	wd := int(time.Date(y, m, d, 0, 0, 0, 0, time.UTC).Weekday()) + 1 // 1 = Sunday
	if !c.dom.any {
		s := c.dom
		switch {
		case s.last:
			return d == n
		case s.lastWeek:
			return d == nearestWeekday(y, m, n)
		case s.weekday > 0:
			if s.weekday > n {
				return false
			}
			return d == nearestWeekday(y, m, s.weekday)
		}
		return s.set&(1<<d) != 0
	}
	s := c.dow
	switch {
	case s.last > 0:
		return wd == s.last && d+7 > n
	case s.nth[0] > 0:
		return wd == s.nth[0] && (d-1)/7+1 == s.nth[1]
	}
	return s.set&(1<<wd) != 0
}

// nearestWeekday is the weekday (Monday to Friday) nearest day d of the
// month, not crossing into another month.
func nearestWeekday(y int, m time.Month, d int) int {
	n := daysIn(y, m)
	switch time.Date(y, m, d, 0, 0, 0, 0, time.UTC).Weekday() {
	case time.Saturday:
		if d == 1 {
			return 3
		}
		return d - 1
	case time.Sunday:
		if d == n {
			return d - 2
		}
		return d + 1
	}
	return d
}

// next returns the first instant after t at which c fires in loc: wall
// times that a spring-forward gap skips do not fire; a wall time that a
// fall-back repeats fires once, at its first occurrence.
func (c *cronExpr) next(t time.Time, loc *time.Location) (time.Time, bool) {
	lt := t.In(loc)
	// Start at the wall-clock minute that follows t's. Near a fall-back
	// this may be a wall time already passed; such candidates map to
	// instants before t and are skipped below.
	start := time.Date(lt.Year(), lt.Month(), lt.Day(), lt.Hour(), lt.Minute(), 0, 0, time.UTC).Add(time.Minute)
	first := true
	for day := time.Date(start.Year(), start.Month(), start.Day(), 0, 0, 0, 0, time.UTC); day.Year() <= maxYear; day = day.AddDate(0, 0, 1) {
		y, m, d := day.Date()
		if !c.year(y) {
			if y < minYear {
				day = time.Date(minYear, 1, 0, 0, 0, 0, 0, time.UTC)
				continue
			}
			day = time.Date(y+1, 1, 0, 0, 0, 0, 0, time.UTC)
			first = false
			continue
		}
		if c.month&(1<<int(m)) == 0 {
			day = time.Date(y, m+1, 0, 0, 0, 0, 0, time.UTC)
			first = false
			continue
		}
		if !c.dayMatches(y, m, d) {
			first = false
			continue
		}
		for h := 0; h < 24; h++ {
			if c.hour&(1<<h) == 0 {
				continue
			}
			for mi := 0; mi < 60; mi++ {
				if c.minute&(1<<mi) == 0 {
					continue
				}
				w := wall{y, int(m), d, h, mi, 0}
				if first && w.naive().Before(start) {
					continue
				}
				at, ok := w.instant(loc)
				if !ok || !at.After(t) {
					continue
				}
				return at, true
			}
		}
		first = false
	}
	return time.Time{}, false
}

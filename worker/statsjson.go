package worker

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"strconv"
	"time"
)

// MarshalJSON encodes Stats as StatsHandler serves it: an object with every
// field under its Go name, in the order of the struct, and the durations
// (HandlerTime, MeanHandlerTime, OldestAge) as Go duration strings such as
// "1.5s" or "250ms", which time.ParseDuration reads back.
func (s Stats) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	v := reflect.ValueOf(s)
	first := true
	for i := range v.NumField() {
		f := v.Type().Field(i)
		if !f.IsExported() {
			continue
		}
		if !first {
			b.WriteByte(',')
		}
		first = false
		b.WriteString(strconv.Quote(f.Name))
		b.WriteByte(':')
		var val any = v.Field(i).Interface()
		if d, ok := val.(time.Duration); ok {
			val = d.String()
		}
		data, err := json.Marshal(val)
		if err != nil {
			return nil, fmt.Errorf("worker.Stats.%s: %w", f.Name, err)
		}
		b.Write(data)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// UnmarshalJSON decodes what MarshalJSON writes. It also reads the
// durations as integer nanoseconds, the form StatsHandler served before
// v1, so `sqsworker cost`, `sqsworker template --scaling` and the console
// read the statistics of older workers too.
func (s *Stats) UnmarshalJSON(data []byte) error {
	type plain Stats // Stats without its methods
	var aux struct {
		plain
		HandlerTime     jsonDuration
		MeanHandlerTime jsonDuration
		OldestAge       jsonDuration
	}
	if err := json.Unmarshal(data, &aux); err != nil {
		return err
	}
	*s = Stats(aux.plain)
	s.HandlerTime = time.Duration(aux.HandlerTime)
	s.MeanHandlerTime = time.Duration(aux.MeanHandlerTime)
	s.OldestAge = time.Duration(aux.OldestAge)
	return nil
}

// jsonDuration reads a duration given as a Go duration string ("1.5s") or
// as integer nanoseconds.
type jsonDuration time.Duration

func (d *jsonDuration) UnmarshalJSON(data []byte) error {
	if string(data) == "null" {
		return nil
	}
	if len(data) > 0 && data[0] == '"' {
		var s string
		if err := json.Unmarshal(data, &s); err != nil {
			return err
		}
		v, err := time.ParseDuration(s)
		if err != nil {
			return fmt.Errorf("a duration: %w", err)
		}
		*d = jsonDuration(v)
		return nil
	}
	var n int64
	if err := json.Unmarshal(data, &n); err != nil {
		return fmt.Errorf("a duration must be a string such as \"1.5s\" or integer nanoseconds: %w", err)
	}
	*d = jsonDuration(n)
	return nil
}

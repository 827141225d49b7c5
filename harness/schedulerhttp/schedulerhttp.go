// Package schedulerhttp serves an in-memory EventBridge Scheduler
// (schedules/schedulestest) over HTTP in Scheduler's REST-JSON protocol, so
// that the real SDK client (*scheduler.Client with a BaseEndpoint) reaches
// it, from other OS processes too. It speaks the five calls package
// schedules makes (CreateSchedule, GetSchedule, UpdateSchedule,
// DeleteSchedule, ListSchedules), with Scheduler's error types in the
// X-Amzn-ErrorType header, and counts the requests by call and outcome.
package schedulerhttp

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/scheduler"
	"github.com/aws/aws-sdk-go-v2/service/scheduler/types"
	"github.com/aws/smithy-go"

	"github.com/sqsworker/sqsworker/schedules"
)

// Server is the HTTP face of a schedules.API.
type Server struct {
	api schedules.API
	mu  sync.Mutex
	n   map[string]int
}

// New returns a Server for api (a schedulestest.Scheduler).
func New(api schedules.API) *Server { return &Server{api: api, n: map[string]int{}} }

// Counts returns the requests served so far, by "Call" or "Call:ErrorType".
func (s *Server) Counts() map[string]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[string]int, len(s.n))
	for k, v := range s.n {
		out[k] = v
	}
	return out
}

func (s *Server) count(op string, err error) {
	var ae smithy.APIError
	if errors.As(err, &ae) {
		op += ":" + ae.ErrorCode()
	} else if err != nil {
		op += ":error"
	}
	s.mu.Lock()
	s.n[op]++
	s.mu.Unlock()
}

// dates are the timestamp members, epoch seconds on the wire.
var dates = map[string]bool{"StartDate": true, "EndDate": true, "CreationDate": true, "LastModificationDate": true}

// decode reads a request body into in, turning epoch-second dates into
// what encoding/json reads as a time.Time.
func decode(r io.Reader, in any) error {
	var m map[string]any
	dec := json.NewDecoder(r)
	dec.UseNumber()
	if err := dec.Decode(&m); err != nil && err != io.EOF {
		return err
	}
	for k, v := range m {
		if n, ok := v.(json.Number); ok && dates[k] {
			f, _ := n.Float64()
			m[k] = time.Unix(0, int64(f*1e9)).UTC().Format(time.RFC3339Nano)
		}
	}
	b, _ := json.Marshal(m)
	return json.Unmarshal(b, in)
}

// encode writes out as the response body, dates in epoch seconds.
func encode(w http.ResponseWriter, out any) {
	b, _ := json.Marshal(out)
	var m map[string]any
	_ = json.Unmarshal(b, &m)
	delete(m, "ResultMetadata")
	fix(m)
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(m)
}

func fix(v any) {
	switch v := v.(type) {
	case map[string]any:
		for k, x := range v {
			if s, ok := x.(string); ok && dates[k] {
				if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
					v[k] = float64(t.UnixNano()) / 1e9
				}
				continue
			}
			if x == nil {
				delete(v, k)
				continue
			}
			fix(x)
		}
	case []any:
		for _, x := range v {
			fix(x)
		}
	}
}

func fail(w http.ResponseWriter, err error) {
	code, status := "InternalServerException", http.StatusInternalServerError
	var ae smithy.APIError
	if errors.As(err, &ae) {
		code = ae.ErrorCode()
		switch code {
		case "ConflictException":
			status = http.StatusConflict
		case "ResourceNotFoundException":
			status = http.StatusNotFound
		case "ValidationException":
			status = http.StatusBadRequest
		}
	}
	w.Header().Set("X-Amzn-ErrorType", code)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]string{"Message": err.Error()})
}

func optional(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// ServeHTTP serves one Scheduler request.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	q := r.URL.Query()
	name, isOne := strings.CutPrefix(r.URL.Path, "/schedules/")
	var (
		out any
		err error
		op  string
	)
	switch {
	case r.URL.Path == "/schedules" && r.Method == http.MethodGet:
		op = "ListSchedules"
		in := &scheduler.ListSchedulesInput{GroupName: optional(q.Get("ScheduleGroup")), NamePrefix: optional(q.Get("NamePrefix")),
			NextToken: optional(q.Get("NextToken")), State: types.ScheduleState(q.Get("State"))}
		if m := q.Get("MaxResults"); m != "" {
			n, _ := strconv.Atoi(m)
			in.MaxResults = aws.Int32(int32(n))
		}
		out, err = s.api.ListSchedules(ctx, in)
	case isOne && r.Method == http.MethodPost:
		op = "CreateSchedule"
		in := &scheduler.CreateScheduleInput{}
		if err = decode(r.Body, in); err == nil {
			in.Name = aws.String(name)
			out, err = s.api.CreateSchedule(ctx, in)
		}
	case isOne && r.Method == http.MethodPut:
		op = "UpdateSchedule"
		in := &scheduler.UpdateScheduleInput{}
		if err = decode(r.Body, in); err == nil {
			in.Name = aws.String(name)
			out, err = s.api.UpdateSchedule(ctx, in)
		}
	case isOne && r.Method == http.MethodGet:
		op = "GetSchedule"
		out, err = s.api.GetSchedule(ctx, &scheduler.GetScheduleInput{Name: aws.String(name), GroupName: optional(q.Get("groupName"))})
	case isOne && r.Method == http.MethodDelete:
		op = "DeleteSchedule"
		out, err = s.api.DeleteSchedule(ctx, &scheduler.DeleteScheduleInput{Name: aws.String(name), GroupName: optional(q.Get("groupName")),
			ClientToken: optional(q.Get("clientToken"))})
	default:
		op, err = "Unknown", &types.ValidationException{Message: aws.String(fmt.Sprintf("schedulerhttp: %s %s is not a call it serves", r.Method, r.URL.Path))}
	}
	s.count(op, err)
	if err != nil {
		fail(w, err)
		return
	}
	encode(w, out)
}

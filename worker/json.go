package worker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/sqsworker/sqsworker/retry"
)

// JSONOptions configures a JSON handler. Every field's zero value selects
// the strict default.
type JSONOptions struct {
	// AllowUnknownFields accepts bodies with fields the job type does not
	// have, ignoring them. Zero value: false; such a body is a permanent
	// failure, so a producer and a consumer that disagree on the job's
	// shape are noticed (in the dead-letter queue) rather than silently
	// losing data.
	AllowUnknownFields bool
}

// JSON returns a Handler that decodes each message body as a JSON T and
// calls fn with it. fn's error decides the message's fate as any handler's
// does.
//
// Decoding is strict: the body must hold exactly one JSON value, not null
// (a null body would run fn with T's zero value, as if a job had been
// sent), and (unless JSONOptions.AllowUnknownFields) only fields T has. A
// body that does not
// decode is a permanent failure (retry.Permanent): retrying cannot fix it,
// so the message goes to the dead-letter queue at once, with the decode
// error as its reason. The error names T and the message, e.g. `message
// 3f2a… is not a valid orders.Job: json: unknown field "colour"`.
//
// The same handler runs in a Worker and in sqslambda. Package producer's
// JSON[T] sends jobs in this form.
func JSON[T any](fn func(ctx context.Context, job T, m *Message) error, optFns ...func(*JSONOptions)) Handler {
	var o JSONOptions
	for _, f := range optFns {
		f(&o)
	}
	return HandlerFunc(func(ctx context.Context, m *Message) error {
		var job T
		if err := decodeJSON(m.Body, &job, o); err != nil {
			return retry.Permanent(fmt.Errorf("message %s is not a valid %T: %w", m.ID, job, err))
		}
		return fn(ctx, job, m)
	})
}

// errTrailing reports data after the body's JSON value.
var errTrailing = errors.New("unexpected data after the JSON value")

// errNull reports a body that is JSON null: it decodes into any T without
// error, leaving T's zero value, which no producer meant as a job.
var errNull = errors.New("the body is JSON null, not a job; a producer that sends a job encodes a value")

func decodeJSON(body string, v any, o JSONOptions) error {
	dec := json.NewDecoder(strings.NewReader(body))
	if !o.AllowUnknownFields {
		dec.DisallowUnknownFields()
	}
	if err := dec.Decode(v); err != nil {
		if errors.Is(err, io.EOF) {
			return errors.New("the body is empty")
		}
		return err
	}
	var rest json.RawMessage
	if err := dec.Decode(&rest); !errors.Is(err, io.EOF) {
		return errTrailing
	}
	if strings.Trim(body, " \t\r\n") == "null" {
		return errNull
	}
	return nil
}

package schedules

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/scheduler"
	"github.com/aws/aws-sdk-go-v2/service/scheduler/types"

	"github.com/sqsworker/sqsworker/producer"
)

// cancelMargin is how long before a job's due time Cancel and Reschedule
// stop acting: from then on the fire wins (Scheduler invokes anywhere in
// the due minute, and the clocks of two machines differ).
const cancelMargin = time.Minute

// Jobs sends jobs due at a time through one-time EventBridge Scheduler
// schedules (at(), deleted after they fire) instead of parking them in the
// queue: a job waiting for tomorrow costs one CreateSchedule and holds
// nothing in flight, and it can be cancelled or moved by its ID until a
// minute before it is due.
type Jobs struct {
	client API
	queue  string
	o      Options
}

// NewJobs returns a Jobs that sends to the queue with ARN queue. Options:
// RoleARN is required; Group "" means "sqsworker-jobs" (a group of its
// own: Apply on the same group would delete pending jobs); DLQ,
// MaxRetries, MaxEventAge and Now as for periodic schedules.
func NewJobs(client API, queue string, optFns ...func(*Options)) (*Jobs, error) {
	if client == nil {
		return nil, invalid("NewJobs: client is nil; pass a *scheduler.Client")
	}
	j := &Jobs{client: client, queue: queue}
	j.o = options(append([]func(*Options){func(o *Options) { o.Group = "sqsworker-jobs" }}, optFns...))
	probe := Schedule{Name: "probe", Expression: "rate(1 day)", Queue: queue, GroupID: groupProbe(queue)}
	if _, err := probe.check(j.o, j.o.Now()); err != nil {
		return nil, err
	}
	return j, nil
}

func groupProbe(queue string) string {
	if len(queue) > 5 && queue[len(queue)-5:] == ".fifo" {
		return "g"
	}
	return ""
}

// At schedules msg to be sent to the queue at due (to Scheduler's
// one-minute precision) under the ID id, and returns the ID (a random one
// when id is ""). msg's Body, Attributes and GroupID are sent; Delay and
// DeduplicationID are refused (due replaces the first; a FIFO queue needs
// content-based deduplication). At with the same id and content again is a
// no-op; another job under a pending id is refused.
func (j *Jobs) At(ctx context.Context, id string, due time.Time, msg producer.Message) (string, error) {
	if id == "" {
		b := make([]byte, 12)
		_, _ = rand.Read(b)
		id = "job-" + hex.EncodeToString(b)
	}
	if msg.Delay != 0 {
		return "", invalid("job %q: Message.Delay is set; the due time replaces it, set it to 0", id)
	}
	if msg.DeduplicationID != "" {
		return "", invalid("job %q: Message.DeduplicationID cannot travel through Scheduler; enable content-based deduplication on the FIFO queue and leave it empty", id)
	}
	sp, err := j.spec(id, due, msg.Body, msg)
	if err != nil {
		return "", err
	}
	_, err = do(ctx, j.o.MaxAttempts, "CreateSchedule", func(ctx context.Context, f ...func(*scheduler.Options)) (*scheduler.CreateScheduleOutput, error) {
		return j.client.CreateSchedule(ctx, sp.create(j.o.Group, id, types.ActionAfterCompletionDelete), f...)
	})
	if conflict(err) {
		c, gerr := get(ctx, j.client, j.o, id)
		if gerr == nil && c.ok && len(sp.diff(c.spec)) == 0 {
			return id, nil
		}
		return "", invalid("job %q is already scheduled with other content; Cancel it first or use another ID", id)
	}
	if err != nil {
		return "", err
	}
	return id, nil
}

func (j *Jobs) spec(id string, due time.Time, body string, msg producer.Message) (spec, error) {
	s := Schedule{
		Name: id, Expression: "at(" + due.UTC().Format("2006-01-02T15:04:05") + ")", Queue: j.queue,
		Body: body, Attributes: msg.Attributes, GroupID: msg.GroupID,
	}
	return s.check(j.o, j.o.Now())
}

// Cancel deletes the pending job id. It reports false when the job is no
// longer pending (it fired, was cancelled, or never existed) and when it
// is due within a minute: then the fire wins and the job runs. A true
// answer means the job will not be sent.
func (j *Jobs) Cancel(ctx context.Context, id string) (bool, error) {
	if _, ok, err := j.pending(ctx, id); !ok || err != nil {
		return false, err
	}
	_, err := do(ctx, j.o.MaxAttempts, "DeleteSchedule", func(ctx context.Context, f ...func(*scheduler.Options)) (*scheduler.DeleteScheduleOutput, error) {
		return j.client.DeleteSchedule(ctx, &scheduler.DeleteScheduleInput{Name: aws.String(id), GroupName: aws.String(j.o.Group)}, f...)
	})
	if notFound(err) {
		return false, nil
	}
	return err == nil, err
}

// Reschedule moves the pending job id to due. It reports false, and
// changes nothing, when the job is no longer pending or is due within a
// minute (the fire wins).
func (j *Jobs) Reschedule(ctx context.Context, id string, due time.Time) (bool, error) {
	cur, ok, err := j.pending(ctx, id)
	if !ok || err != nil {
		return false, err
	}
	if !due.After(j.o.Now()) {
		return false, invalid("job %q: the new due time %s is not in the future", id, due.UTC().Format(time.RFC3339))
	}
	cur.Expression = "at(" + due.UTC().Format("2006-01-02T15:04:05") + ")"
	cur.TimeZone = "UTC"
	_, err = do(ctx, j.o.MaxAttempts, "UpdateSchedule", func(ctx context.Context, f ...func(*scheduler.Options)) (*scheduler.UpdateScheduleOutput, error) {
		return j.client.UpdateSchedule(ctx, cur.update(j.o.Group, id, types.ActionAfterCompletionDelete), f...)
	})
	if notFound(err) {
		return false, nil
	}
	return err == nil, err
}

// pending reads job id and reports whether it may still be cancelled.
func (j *Jobs) pending(ctx context.Context, id string) (spec, bool, error) {
	if !nameRE.MatchString(id) {
		return spec{}, false, invalid("job ID %q: use 1 to 64 letters, digits, '-', '_' or '.'", id)
	}
	c, err := get(ctx, j.client, j.o, id)
	if err != nil || !c.ok {
		return spec{}, false, err
	}
	e, err := parseExpr(c.spec.Expression)
	if err != nil || e.at == nil {
		return spec{}, false, invalid("schedule %q in group %q is not a one-time job (%s)", id, j.o.Group, c.spec.Expression)
	}
	loc, err := (Schedule{Name: id, TimeZone: c.spec.TimeZone}).location()
	if err != nil {
		return spec{}, false, err
	}
	due, _ := e.at.instant(loc)
	if due.Sub(j.o.Now()) <= cancelMargin {
		return spec{}, false, nil
	}
	return c.spec, true, nil
}

package schedules

import (
	"context"
	"errors"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/service/scheduler"
	"github.com/aws/aws-sdk-go-v2/service/scheduler/types"

	"github.com/sqsworker/sqsworker/internal/awscall"
	"github.com/sqsworker/sqsworker/internal/sqserr"
)

// API is the part of the EventBridge Scheduler client this package uses,
// with the SDK's exact signatures; *scheduler.Client implements it, and so
// does schedulestest's in-memory Scheduler.
type API interface {
	CreateSchedule(ctx context.Context, params *scheduler.CreateScheduleInput, optFns ...func(*scheduler.Options)) (*scheduler.CreateScheduleOutput, error)
	GetSchedule(ctx context.Context, params *scheduler.GetScheduleInput, optFns ...func(*scheduler.Options)) (*scheduler.GetScheduleOutput, error)
	ListSchedules(ctx context.Context, params *scheduler.ListSchedulesInput, optFns ...func(*scheduler.Options)) (*scheduler.ListSchedulesOutput, error)
	UpdateSchedule(ctx context.Context, params *scheduler.UpdateScheduleInput, optFns ...func(*scheduler.Options)) (*scheduler.UpdateScheduleOutput, error)
	DeleteSchedule(ctx context.Context, params *scheduler.DeleteScheduleInput, optFns ...func(*scheduler.Options)) (*scheduler.DeleteScheduleOutput, error)
}

var _ API = (*scheduler.Client)(nil)

// do makes one Scheduler call by the library's one retry rule
// (internal/awscall): the SDK's retryer off, throttling and server errors
// retried with its backoff, at most attempts requests; it returns the last
// error with what to do. Every call the package makes goes through here.
func do[T any](ctx context.Context, attempts int, op string, call func(context.Context, ...func(*scheduler.Options)) (T, error)) (T, error) {
	out, err := awscall.Do(ctx, awscall.Rule{Attempts: attempts}, "Scheduler", op, func(ctx context.Context) (T, error) {
		return call(ctx, awscall.SchedulerOff)
	})
	if err != nil {
		return out, explain(op, err)
	}
	return out, nil
}

func notFound(err error) bool {
	var e *types.ResourceNotFoundException
	return errors.As(err, &e)
}

func conflict(err error) bool {
	var e *types.ConflictException
	return errors.As(err, &e)
}

func explain(op string, err error) error {
	var quota *types.ServiceQuotaExceededException
	switch {
	case errors.As(err, &quota):
		return fmt.Errorf("schedules: %s: %w (a Scheduler quota is reached: delete unused schedules or ask for a quota increase)", op, err)
	case sqserr.Of(err) == sqserr.Throttled:
		return fmt.Errorf("schedules: %s: %w (still throttled after retries: spread the calls or ask for a higher Scheduler request quota)", op, err)
	case sqserr.Of(err) == sqserr.Fatal:
		return fmt.Errorf("schedules: %s: %w (the caller needs scheduler:%s and iam:PassRole on the execution role)", op, err, op)
	}
	return fmt.Errorf("schedules: %s: %w", op, err)
}

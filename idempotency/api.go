package idempotency

import (
	"context"
	"errors"
	"sync/atomic"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/sqsworker/sqsworker/internal/dynamo"
)

// API is the part of the DynamoDB client this package uses, with the SDK's
// exact signatures; *dynamodb.Client satisfies it.
//
// A Guard makes the item calls:
//
//   - PutItem: take the lock (conditional: no live record).
//   - UpdateItem: push the lock's expiry forward; record the job as
//     completed (conditional: this run still holds the lock).
//   - DeleteItem: remove the record of a failed run (conditional: this run
//     still holds the lock).
//
// CreateTable makes the table calls: CreateTable, DescribeTable,
// DescribeTimeToLive and UpdateTimeToLive.
type API interface {
	PutItem(ctx context.Context, params *dynamodb.PutItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error)
	UpdateItem(ctx context.Context, params *dynamodb.UpdateItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error)
	DeleteItem(ctx context.Context, params *dynamodb.DeleteItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.DeleteItemOutput, error)
	CreateTable(ctx context.Context, params *dynamodb.CreateTableInput, optFns ...func(*dynamodb.Options)) (*dynamodb.CreateTableOutput, error)
	DescribeTable(ctx context.Context, params *dynamodb.DescribeTableInput, optFns ...func(*dynamodb.Options)) (*dynamodb.DescribeTableOutput, error)
	DescribeTimeToLive(ctx context.Context, params *dynamodb.DescribeTimeToLiveInput, optFns ...func(*dynamodb.Options)) (*dynamodb.DescribeTimeToLiveOutput, error)
	UpdateTimeToLive(ctx context.Context, params *dynamodb.UpdateTimeToLiveInput, optFns ...func(*dynamodb.Options)) (*dynamodb.UpdateTimeToLiveOutput, error)
}

var _ API = (*dynamodb.Client)(nil)

// The APIs counted in Stats.Requests.
const (
	apiPutItem = iota
	apiUpdateItem
	apiDeleteItem
	numAPIs
)

var apiNames = [numAPIs]string{"PutItem", "UpdateItem", "DeleteItem"}

// ErrUnavailable matches, with errors.Is, the error a Guard returns for a
// message it could not run because DynamoDB could not be reached or refused
// the request (the table is missing, access is denied, throttling outlasted
// the SDK's retries): the message fails and is retried, and never runs
// without its lock unless Options.FailOpen is set. It also matches the
// cause of a handler context cancelled because the lock could not be kept.
var ErrUnavailable = errors.New("idempotency: DynamoDB unavailable")

// ErrTableNotFound matches, with errors.Is, the errors caused by a table
// that does not exist (see CreateTable).
var ErrTableNotFound = errors.New("idempotency: table not found")

// ErrThrottled matches, with errors.Is, the errors caused by DynamoDB
// throttling that outlasted the SDK's retries.
var ErrThrottled = errors.New("idempotency: throttled")

// ErrLockLost is the cause (context.Cause) of a handler context the Guard
// cancelled because the job's lock could not be kept: another run took it
// over, its record was removed, or DynamoDB could not be reached to extend
// it before it expired. The handler should stop; the message is then
// retried (or snoozed, when another run holds the lock).
var ErrLockLost = errors.New("idempotency: the job's lock was lost")

// recordTable describes the records' table to package dynamo.
func recordTable(name string) dynamo.Table {
	return dynamo.Table{
		Name: name, Key: attrKey, TTL: attrTTL,
		Pkg: "idempotency", Items: "idempotency records", Use: "the Guard",
		NotFound: ErrTableNotFound, Throttled: ErrThrottled,
	}
}

// unavailableError is a DynamoDB failure that kept a message from running.
type unavailableError struct{ err error }

func (e *unavailableError) Error() string {
	return e.err.Error() + "; the message fails and is retried, never run without its lock (set Options.FailOpen to run messages unprotected while DynamoDB is unavailable)"
}

func (e *unavailableError) Unwrap() []error { return []error{ErrUnavailable, e.err} }

// countCalls is the per-API request counters.
type countCalls = [numAPIs]atomic.Int64

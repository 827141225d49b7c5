package fleet

import (
	"context"
	crand "crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/sqsworker/sqsworker/internal/awscall"
	"github.com/sqsworker/sqsworker/internal/dynamo"
)

// The attribute names of the fleet table (the package documentation lists
// them for infrastructure code).
const (
	// keyAttribute is the table's partition key (type S). Items are named
	// "<kind>|<name>|<key>": rate|…, cap|…, pause|<queue name>, breaker|….
	keyAttribute = "pk"
	// ttlAttribute holds an item's expiry in epoch seconds (type N): items
	// of keys no longer used (a tenant gone quiet) expire by themselves.
	ttlAttribute = "expiresAt"
)

// itemTTL is how long an item of a rate limit, cap or breaker lives after
// its last write. Pause items never expire.
const itemTTL = 7 * 24 * time.Hour

// API is the part of the DynamoDB client the fleet uses: the controls
// (GetItem, UpdateItem), New's check of the table (DescribeTable), Usage
// (Scan) and CreateTable (CreateTable, DescribeTable, DescribeTimeToLive,
// UpdateTimeToLive). *dynamodb.Client satisfies it.
type API interface {
	GetItem(ctx context.Context, params *dynamodb.GetItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error)
	UpdateItem(ctx context.Context, params *dynamodb.UpdateItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error)
	DescribeTable(ctx context.Context, params *dynamodb.DescribeTableInput, optFns ...func(*dynamodb.Options)) (*dynamodb.DescribeTableOutput, error)
	Scan(ctx context.Context, params *dynamodb.ScanInput, optFns ...func(*dynamodb.Options)) (*dynamodb.ScanOutput, error)
	CreateTable(ctx context.Context, params *dynamodb.CreateTableInput, optFns ...func(*dynamodb.Options)) (*dynamodb.CreateTableOutput, error)
	DescribeTimeToLive(ctx context.Context, params *dynamodb.DescribeTimeToLiveInput, optFns ...func(*dynamodb.Options)) (*dynamodb.DescribeTimeToLiveOutput, error)
	UpdateTimeToLive(ctx context.Context, params *dynamodb.UpdateTimeToLiveInput, optFns ...func(*dynamodb.Options)) (*dynamodb.UpdateTimeToLiveOutput, error)
}

var _ API = (*dynamodb.Client)(nil)

// The errors caused by a fleet table that does not exist, and by DynamoDB
// throttling that outlasted the library's retry, match these (with
// errors.Is) besides the SDK's error (*types.ResourceNotFoundException,
// *types.ThrottlingException and the like, with errors.As).
var (
	errTableNotFound = errors.New("fleet: table not found")
	errThrottled     = errors.New("fleet: throttled")
)

// Options configures a Fleet. Every field's zero value selects the
// documented default.
type Options struct {
	// Holder names this process in the slots it holds (Cap, shown by
	// Usage) and in pauses it sets (PauseState.By). Zero value:
	// "<hostname>-<pid>-<random>".
	Holder string
	// CallTimeout bounds every DynamoDB call, its retry included. A call
	// that DynamoDB refuses or fails with an error retrying can fix is made
	// again once, 50-100 ms later (the library's retry rule; the SDK's own
	// retries are off), so a refused call fails within about 100 ms and a
	// control's FailOpen decides at once. Zero value: 5 s.
	CallTimeout time.Duration
	// StartupTimeout bounds New's check of the table. Zero value: 10 s.
	StartupTimeout time.Duration
	// Logger receives the controls' warnings (DynamoDB failures, lost
	// slots). Zero value: slog.Default().
	Logger *slog.Logger
	// Now is the clock. Zero value: time.Now. The processes sharing a
	// table compare the slot expiries they wrote: keep their clocks closer
	// than a slot's margin (a quarter of the visibility timeout, 250 ms to
	// 5 s); a process whose clock is s ahead takes a slot s before its
	// lease ends. A clock ahead adds at most one Burst to a rate limit,
	// once (see the package documentation, Clocks).
	Now func() time.Time
}

// Fleet is the entry point of the fleet controls: one DynamoDB table,
// shared by every process of the fleet, holding rate-limit buckets,
// concurrency slots, pause switches and shared circuit breakers. Make the
// controls with RateLimit, Cap, Pauser and Breaker; a Fleet and its
// controls are safe for concurrent use.
type Fleet struct {
	client API
	table  string
	o      Options
	seq    atomic.Int64 // slot holder numbers
	st     counters
	rule   awscall.Rule // how every DynamoDB call is made and counted

	mu       sync.Mutex
	paused   map[string]bool          // by queue name, as the pausers last read
	breakers map[string]func() string // breaker states, by name
}

// New returns the Fleet on table. It checks, with one DescribeTable call,
// that the table exists with the right key (see CreateTable), and refuses
// a nil client, an empty table name and negative options.
func New(client API, table string, optFns ...func(*Options)) (*Fleet, error) {
	if client == nil {
		return nil, errors.New("fleet.New: client is nil; pass a *dynamodb.Client")
	}
	if table == "" {
		return nil, errors.New("fleet.New: table name is empty; pass the name of the fleet table (see fleet.CreateTable)")
	}
	var o Options
	for _, fn := range optFns {
		fn(&o)
	}
	if o.CallTimeout < 0 || o.StartupTimeout < 0 {
		return nil, errors.New("fleet.New: Options.CallTimeout and StartupTimeout must not be negative (zero selects the default)")
	}
	if o.CallTimeout == 0 {
		o.CallTimeout = 5 * time.Second
	}
	if o.StartupTimeout == 0 {
		o.StartupTimeout = 10 * time.Second
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Holder == "" {
		host, _ := os.Hostname()
		var b [4]byte
		_, _ = crand.Read(b[:])
		o.Holder = fmt.Sprintf("%s-%d-%s", host, os.Getpid(), hex.EncodeToString(b[:]))
	}
	f := &Fleet{client: client, table: table, o: o, paused: map[string]bool{}, breakers: map[string]func() string{}}
	f.rule = awscall.Rule{Attempts: controlAttempts, Timeout: o.CallTimeout, OnRequest: f.count}
	ctx, cancel := context.WithTimeout(context.Background(), o.StartupTimeout)
	defer cancel()
	t := fleetTable(table)
	t.Rule = f.rule
	if err := t.Check(ctx, client); err != nil {
		return nil, err
	}
	return f, nil
}

// CreateTable makes table ready for a Fleet: it creates it if it does not
// exist (partition key pk of type S, on-demand capacity), waits until it
// is ACTIVE (at most maxWait; 0 means 5 minutes), and enables time-to-live
// on expiresAt. It is idempotent: on an existing table it checks the key
// schema and the TTL setting and changes nothing that is already right. It
// needs dynamodb:CreateTable, dynamodb:DescribeTable,
// dynamodb:DescribeTimeToLive and dynamodb:UpdateTimeToLive; run it from a
// deployment step if the workers' role should not hold those.
func CreateTable(ctx context.Context, client API, table string, maxWait time.Duration) error {
	return fleetTable(table).Create(ctx, client, maxWait)
}

// fleetTable describes the fleet table to package dynamo.
func fleetTable(name string) dynamo.Table {
	return dynamo.Table{
		Name: name, Key: keyAttribute, TTL: ttlAttribute,
		Pkg: "fleet", Items: "fleet items", Use: "the fleet controls",
		NotFound: errTableNotFound, Throttled: errThrottled,
	}
}

// explain wraps an item call's error with what to do about it.
func (f *Fleet) explain(err error, what string) error {
	return fleetTable(f.table).Explain(err, "fleet: "+what+" in table "+strconv.Quote(f.table), "dynamodb:GetItem and dynamodb:UpdateItem")
}

// controlAttempts is how many requests one DynamoDB call of the fleet
// makes at most: the library's retry rule (internal/awscall) with one retry
// instead of four, because a job (and its handler slot) waits on the
// controls' calls: a refused or failing DynamoDB must let FailOpen or
// FailClosed decide within about 100 ms, not after seconds of retries.
const controlAttempts = 2

// call runs one DynamoDB call by the fleet's rule (f.rule: the SDK's
// retryer off, one retry, every request counted), all of it within
// CallTimeout. fn makes the request; it must pass awscall.DynamoDBOff.
func call[T any](f *Fleet, ctx context.Context, fn func(ctx context.Context) (T, error)) (T, error) {
	ctx, cancel := context.WithTimeout(ctx, f.o.CallTimeout)
	defer cancel()
	return awscall.Do(ctx, f.rule, "DynamoDB", awscall.Op[T](), fn)
}

// count counts one request (a failed condition, the normal way two
// processes meet, is not an error).
func (f *Fleet) count(r awscall.Request) {
	f.st.requests.Add(1)
	if r.Err != nil && !isConditionFailed(r.Err) {
		f.st.requestErrors.Add(1)
	}
}

// getItem reads an item with a strongly consistent read; nil when absent.
func (f *Fleet) getItem(ctx context.Context, pk string) (map[string]types.AttributeValue, error) {
	out, err := call(f, ctx, func(ctx context.Context) (*dynamodb.GetItemOutput, error) {
		return f.client.GetItem(ctx, &dynamodb.GetItemInput{
			TableName:      aws.String(f.table),
			Key:            itemKey(pk),
			ConsistentRead: aws.Bool(true),
		}, awscall.DynamoDBOff)
	})
	if err != nil {
		return nil, err
	}
	return out.Item, nil
}

func itemKey(pk string) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{keyAttribute: &types.AttributeValueMemberS{Value: pk}}
}

// isConditionFailed reports whether err is a failed condition expression.
func isConditionFailed(err error) bool {
	var ccf *types.ConditionalCheckFailedException
	return errors.As(err, &ccf)
}

// failedItem returns the item a failed condition returned
// (ReturnValuesOnConditionCheckFailure ALL_OLD), and whether there was one.
func failedItem(err error) (map[string]types.AttributeValue, bool) {
	var ccf *types.ConditionalCheckFailedException
	if errors.As(err, &ccf) && ccf.Item != nil {
		return ccf.Item, true
	}
	return nil, false
}

func num(n int64) types.AttributeValue {
	return &types.AttributeValueMemberN{Value: strconv.FormatInt(n, 10)}
}

func str(s string) types.AttributeValue { return &types.AttributeValueMemberS{Value: s} }

// numAttr reads a number attribute; 0 when absent or not a number.
func numAttr(item map[string]types.AttributeValue, name string) int64 {
	if v, ok := item[name].(*types.AttributeValueMemberN); ok {
		n, _ := strconv.ParseInt(v.Value, 10, 64)
		return n
	}
	return 0
}

func strAttr(item map[string]types.AttributeValue, name string) string {
	if v, ok := item[name].(*types.AttributeValueMemberS); ok {
		return v.Value
	}
	return ""
}

// expires is the TTL value of an item written at now.
func expires(now time.Time) types.AttributeValue { return num(now.Add(itemTTL).Unix()) }

// checkName refuses an empty control name or one with the item key's
// separator.
func checkName(kind, name string) error {
	if name == "" {
		return fmt.Errorf("fleet: %s needs a name: the downstream or resource it protects (e.g. \"payments-api\")", kind)
	}
	if strings.Contains(name, "|") {
		return fmt.Errorf("fleet: %s name %q contains '|', which separates the parts of item keys; choose another name", kind, name)
	}
	return nil
}

// snoozeFor is how long a job that must wait is hidden: d rounded up to
// whole seconds (SQS counts visibility in seconds), at least 1 s, plus up
// to 20% jitter so the waiting jobs of a fleet do not come back at once.
func snoozeFor(d time.Duration) time.Duration {
	d = max(d, time.Second)
	d += time.Duration(rand.Float64() * 0.2 * float64(d))
	return (d + time.Second - 1).Truncate(time.Second)
}

// outageWindow is how often a control whose DynamoDB call failed (an
// outage, a refused connection, throttling past the retry) checks, in the
// background, whether DynamoDB answers again. Until it does, the control
// decides its jobs by FailOpen at once, without a request: in an outage
// one job per control waits on DynamoDB's failure (about 100 ms, the retry
// rule's one retry), the others run (FailOpen) or are snoozed at once.
const outageWindow = 250 * time.Millisecond

// outage is a control's memory of its last failed DynamoDB call.
type outage struct {
	f       *Fleet
	mu      sync.Mutex
	err     error     // the failure; nil: DynamoDB answers
	pk      string    // the item the failed call was about
	next    time.Time // when to check again
	probing bool      // a check is under way
}

// check returns, while the control's DynamoDB is failing, an error saying
// so (wrapping the failure), without a request, and nil otherwise. Every
// outageWindow it reads the control's item in the background (one
// consistent read); once that answers, the control asks DynamoDB again.
func (o *outage) check(now time.Time) error {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.err == nil {
		return nil
	}
	if !o.probing && !now.Before(o.next) {
		o.probing = true
		go o.probe(o.pk)
	}
	return fmt.Errorf("DynamoDB failing (checked again every %v): %w", outageWindow, o.err)
}

// probe reads pk: DynamoDB answers again, or the outage goes on.
func (o *outage) probe(pk string) {
	ctx, cancel := context.WithTimeout(context.Background(), o.f.o.CallTimeout)
	defer cancel()
	_, err := o.f.getItem(ctx, pk)
	o.mu.Lock()
	defer o.mu.Unlock()
	o.probing = false
	if err != nil {
		o.err, o.next = err, o.f.o.Now().Add(outageWindow)
		return
	}
	o.err = nil
}

// note records a control call's outcome for item pk: a failure (not the
// caller's own end) starts an outage.
func (o *outage) note(ctx context.Context, pk string, err error) {
	if err == nil || ctx.Err() != nil {
		return
	}
	o.mu.Lock()
	o.err, o.pk, o.next = err, pk, o.f.o.Now().Add(outageWindow)
	o.mu.Unlock()
}

// sleep waits d, or until ctx ends: false then.
func sleep(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

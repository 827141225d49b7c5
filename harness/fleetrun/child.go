package fleetrun

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/sqsworker/sqsworker/fleet"
	"github.com/sqsworker/sqsworker/worker"
)

// ChildEnv, set to a JSON ChildConfig, makes the test binary a child.
const ChildEnv = "FLEETRUN_CHILD"

// ChildConfig is what a child runs.
type ChildConfig struct {
	Name        string  // the process's name, its holder name and record file prefix
	Dir         string  // where it writes Name.jobs and Name.stats
	Queue       string  // the queue's URL
	Table       string  // the fleet table
	Concurrency int     // handlers
	Rate        float64 // a shared rate limit (jobs/s); 0: none
	Cap         int     // a cap per tenant attribute; 0: none
	Pause       bool    // watch the queue's pause switch (a Pauser as ReceiveGate)
	Work        time.Duration
	// DynamoDB, when set, is the endpoint the fleet controls use (a fault
	// proxy in front of DynamoDB Local) instead of AWS_ENDPOINT_URL_DYNAMODB.
	DynamoDB string
	// Skew moves the fleet's clock (fleet.Options.Now) off the machine's.
	Skew time.Duration
	// ErrorSnooze is the rate limit's and the cap's ErrorSnooze; 0: theirs.
	ErrorSnooze time.Duration
	// FailOpen is the rate limit's and the cap's FailOpen.
	FailOpen bool
	// Breaker puts a shared breaker first in the chain (BreakerOptions.Shared;
	// it counts no error unless DownFile is set, so it stays closed) and
	// makes it, with the Pauser if Pause is set, the worker's ReceiveGate.
	Breaker bool
	// DownFile, when set, is the downstream's switch: while the file
	// exists, every job fails with an error the breaker counts (OpenFor
	// 2 s, MaxOpenFor 4 s). Each message that reaches the breaker is
	// recorded in Name.recv with the breaker's state, and the child counts
	// the breaker's half-open windows (ChildStats.ProbeWindows).
	DownFile string
}

// RecvRecord is one line of a child's .recv file: a message that reached
// the breaker's middleware, and the breaker's state then.
type RecvRecord struct {
	At    int64  `json:"t"` // unix ns
	ID    string `json:"id"`
	State string `json:"s"`
}

// errDown is the downstream's failure while DownFile exists.
var errDown = errors.New("downstream down")

// Record is one line of a child's .jobs file.
type Record struct {
	Proc  string `json:"p"`
	ID    string `json:"id"`
	Group string `json:"g,omitempty"` // the tenant attribute
	Sent  int64  `json:"t"`           // unix ns, SQS's SentTimestamp
	Start int64  `json:"s"`           // unix ns
	End   int64  `json:"e,omitempty"`
	// Receives is the message's receive count when this run started.
	Receives int `json:"n,omitempty"`
}

// ChildStats is a child's .stats file, written when its worker stops.
type ChildStats struct {
	Fleet  fleet.Stats
	Worker worker.Stats
	// Calls counts the fleet's DynamoDB requests by kind: the operation
	// and the first words of its update expression (what the request did).
	Calls map[string]int64
	// ProbeWindows counts the breaker's half-open spells (DownFile).
	ProbeWindows int
}

// countingDB counts the fleet's DynamoDB requests by kind.
type countingDB struct {
	fleet.API
	mu    sync.Mutex
	calls map[string]int64
}

// itemKind is the kind of the item key names: rate, cap, pause, breaker.
func itemKind(key map[string]types.AttributeValue) string {
	pk, _ := key["pk"].(*types.AttributeValueMemberS)
	if pk == nil {
		return "?"
	}
	kind, _, _ := strings.Cut(pk.Value, "|")
	return kind
}

func (c *countingDB) add(kind string) {
	c.mu.Lock()
	c.calls[kind]++
	c.mu.Unlock()
}

func (c *countingDB) GetItem(ctx context.Context, in *dynamodb.GetItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error) {
	c.add("GetItem " + itemKind(in.Key))
	return c.API.GetItem(ctx, in, optFns...)
}

func (c *countingDB) UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	expr, _, _ := strings.Cut(aws.ToString(in.UpdateExpression), ",")
	kind := "UpdateItem " + itemKind(in.Key) + " " + expr
	out, err := c.API.UpdateItem(ctx, in, optFns...)
	if err != nil {
		kind += " (failed)"
	}
	c.add(kind)
	return out, err
}

// RunChild runs a child until SIGTERM and returns its exit code.
func RunChild(raw string) int {
	var c ChildConfig
	if err := json.Unmarshal([]byte(raw), &c); err != nil {
		fmt.Fprintln(os.Stderr, "fleetrun child:", err)
		return 2
	}
	if err := runChild(c); err != nil {
		fmt.Fprintln(os.Stderr, "fleetrun child", c.Name+":", err)
		return 1
	}
	return 0
}

func runChild(c ChildConfig) error {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	cfg, err := config.LoadDefaultConfig(ctx)
	if err != nil {
		return err
	}
	sqsEndpoint, dbEndpoint := os.Getenv("AWS_ENDPOINT_URL_SQS"), os.Getenv("AWS_ENDPOINT_URL_DYNAMODB")
	if c.DynamoDB != "" {
		dbEndpoint = c.DynamoDB
	}
	sq := sqs.NewFromConfig(cfg, func(o *sqs.Options) {
		if sqsEndpoint != "" {
			o.BaseEndpoint = aws.String(sqsEndpoint)
		}
	})
	db := dynamodb.NewFromConfig(cfg, func(o *dynamodb.Options) {
		if dbEndpoint != "" {
			o.BaseEndpoint = aws.String(dbEndpoint)
		}
	})
	counted := &countingDB{API: db, calls: map[string]int64{}}
	f, err := fleet.New(counted, c.Table, func(o *fleet.Options) {
		o.Holder = c.Name
		if c.Skew != 0 {
			o.Now = func() time.Time { return time.Now().Add(c.Skew) }
		}
	})
	if err != nil {
		return err
	}
	out, err := os.OpenFile(fmt.Sprintf("%s/%s.jobs", c.Dir, c.Name), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer out.Close()
	var mu sync.Mutex
	write := func(r Record) {
		b, _ := json.Marshal(r)
		mu.Lock()
		_, _ = out.Write(append(b, '\n')) // one write per record: it survives SIGKILL
		mu.Unlock()
	}
	var h worker.Handler = worker.HandlerFunc(func(ctx context.Context, m *worker.Message) error {
		r := Record{Proc: c.Name, ID: m.ID, Group: fleet.ByAttribute("tenant")(m), Sent: m.SentAt.UnixNano(), Start: time.Now().UnixNano(), Receives: m.ReceiveCount}
		write(r)
		time.Sleep(c.Work)
		if c.DownFile != "" {
			if _, err := os.Stat(c.DownFile); err == nil {
				return errDown
			}
		}
		r.End = time.Now().UnixNano()
		write(r)
		return nil
	})
	var mw []worker.Middleware
	var gates []worker.ReceiveGate
	var windows atomic.Int64
	if c.Breaker {
		b, err := f.Breaker("downstream", func(o *fleet.BreakerOptions) {
			o.Shared = true
			o.Counts = func(err error) bool { return errors.Is(err, errDown) }
			if c.DownFile != "" {
				o.OpenFor, o.MaxOpenFor = 2*time.Second, 4*time.Second
			}
		})
		if err != nil {
			return err
		}
		if c.DownFile != "" {
			recv, err := os.OpenFile(fmt.Sprintf("%s/%s.recv", c.Dir, c.Name), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
			if err != nil {
				return err
			}
			defer recv.Close()
			state := func() string { return f.Stats().Breakers["downstream"] }
			mw = append(mw, func(next worker.Handler) worker.Handler {
				return worker.HandlerFunc(func(ctx context.Context, m *worker.Message) error {
					b, _ := json.Marshal(RecvRecord{At: time.Now().UnixNano(), ID: m.ID, State: state()})
					mu.Lock()
					_, _ = recv.Write(append(b, '\n'))
					mu.Unlock()
					return next.Handle(ctx, m)
				})
			})
			go func() {
				last := ""
				for ctx.Err() == nil {
					if s := state(); s != last {
						if s == "half-open" {
							windows.Add(1)
						}
						last = s
					}
					time.Sleep(5 * time.Millisecond)
				}
			}()
		}
		mw = append(mw, b.Middleware())
		gates = append(gates, b)
	}
	if c.Cap > 0 {
		capc, err := f.Cap("tenant", c.Cap, func(o *fleet.CapOptions) {
			o.Key = fleet.ByAttribute("tenant")
			o.ErrorSnooze, o.FailOpen = c.ErrorSnooze, c.FailOpen
		})
		if err != nil {
			return err
		}
		mw = append(mw, capc.Middleware())
	}
	if c.Rate > 0 {
		l, err := f.RateLimit("downstream", c.Rate, func(o *fleet.RateLimitOptions) { o.ErrorSnooze, o.FailOpen = c.ErrorSnooze, c.FailOpen })
		if err != nil {
			return err
		}
		mw = append(mw, l.Middleware())
	}
	if c.Pause {
		p, err := f.Pauser(c.Queue)
		if err != nil {
			return err
		}
		gates = append(gates, p)
	}
	var gate worker.ReceiveGate
	switch len(gates) {
	case 0:
	case 1:
		gate = gates[0]
	default:
		gate = fleet.AllOpen(gates...)
	}
	w, err := worker.New(sq, c.Queue, worker.Chain(h, mw...), func(o *worker.Options) {
		o.ReceiveGate = gate
		o.Concurrency = c.Concurrency
		o.MaxPrefetch = c.Concurrency
		o.WaitTime = 2 * time.Second
		o.ShutdownTimeout = 5 * time.Second
	})
	if err != nil {
		return err
	}
	runErr := w.Run(ctx)
	counted.mu.Lock()
	b, _ := json.Marshal(ChildStats{Fleet: f.Stats(), Worker: w.Stats(), Calls: counted.calls, ProbeWindows: int(windows.Load())})
	counted.mu.Unlock()
	if err := os.WriteFile(fmt.Sprintf("%s/%s.stats", c.Dir, c.Name), b, 0o644); err != nil {
		return err
	}
	return runErr
}

// seconds reads FLEETRUN_SECONDS, or def.
func seconds(def int) int { return envInt("FLEETRUN_SECONDS", def) }

// envInt reads a positive number from the environment, or def.
func envInt(name string, def int) int {
	if n, err := strconv.Atoi(os.Getenv(name)); err == nil && n > 0 {
		return n
	}
	return def
}

package unique_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/smithy-go/logging"

	"github.com/sqsworker/sqsworker/harness/testenv"
	"github.com/sqsworker/sqsworker/producer"
	"github.com/sqsworker/sqsworker/unique"
	"github.com/sqsworker/sqsworker/worker"
)

// sendChildEnv, set to the JSON of a sendChild, makes the test binary a
// producing process: it sends the keys Rounds times, the rounds at once,
// and writes its sendTally to Out.
const sendChildEnv = "UNIQUE_SEND_CHILD"

type sendChild struct {
	Queue, Table, Out string
	Index, Keys       int
	Rounds            int
}

// sendTally is what a producing process reports.
type sendTally struct {
	Accepted, Refused, Errors int64
	Calls                     map[string]int64 // DynamoDB calls by operation
	Stats                     unique.Stats
	Elapsed                   time.Duration
}

// countingDB counts the DynamoDB calls a Store makes, by operation
// (requests, retries included: the Store's rule passes every request
// through here).
type countingDB struct {
	*dynamodb.Client
	mu    sync.Mutex
	calls map[string]int64
}

func newCountingDB(c *dynamodb.Client) *countingDB {
	return &countingDB{Client: c, calls: map[string]int64{}}
}

func (c *countingDB) add(op string) {
	c.mu.Lock()
	c.calls[op]++
	c.mu.Unlock()
}

func (c *countingDB) snapshot() map[string]int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make(map[string]int64, len(c.calls))
	for k, v := range c.calls {
		out[k] = v
	}
	return out
}

func (c *countingDB) PutItem(ctx context.Context, in *dynamodb.PutItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
	c.add("PutItem")
	return c.Client.PutItem(ctx, in, optFns...)
}

func (c *countingDB) UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	c.add("UpdateItem")
	return c.Client.UpdateItem(ctx, in, optFns...)
}

func (c *countingDB) DeleteItem(ctx context.Context, in *dynamodb.DeleteItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.DeleteItemOutput, error) {
	c.add("DeleteItem")
	return c.Client.DeleteItem(ctx, in, optFns...)
}

func (c *countingDB) DescribeTable(ctx context.Context, in *dynamodb.DescribeTableInput, optFns ...func(*dynamodb.Options)) (*dynamodb.DescribeTableOutput, error) {
	c.add("DescribeTable")
	return c.Client.DescribeTable(ctx, in, optFns...)
}

func (c *countingDB) Scan(ctx context.Context, in *dynamodb.ScanInput, optFns ...func(*dynamodb.Options)) (*dynamodb.ScanOutput, error) {
	c.add("Scan")
	return c.Client.Scan(ctx, in, optFns...)
}

// childClients are a child process's SQS and DynamoDB clients, on the
// endpoints of its environment.
func childClients(ctx context.Context) (*sqs.Client, *dynamodb.Client, error) {
	// DynamoDB Local's answers to failed conditions fail the SDK's
	// response checksum check, which only logs: not in these logs.
	cfg, err := config.LoadDefaultConfig(ctx, config.WithLogger(logging.Nop{}),
		config.WithHTTPClient(awshttp.NewBuildableClient().WithTransportOptions(func(t *http.Transport) { t.MaxIdleConnsPerHost = 100 })))
	if err != nil {
		return nil, nil, err
	}
	sq := sqs.NewFromConfig(cfg, func(o *sqs.Options) {
		if ep := os.Getenv("AWS_ENDPOINT_URL_SQS"); ep != "" {
			o.BaseEndpoint = aws.String(ep)
		}
	})
	db := dynamodb.NewFromConfig(cfg, func(o *dynamodb.Options) {
		if ep := os.Getenv("AWS_ENDPOINT_URL_DYNAMODB"); ep != "" {
			o.BaseEndpoint = aws.String(ep)
		}
	})
	return sq, db, nil
}

func runSendChild(raw string) error {
	var c sendChild
	if err := json.Unmarshal([]byte(raw), &c); err != nil {
		return err
	}
	ctx := context.Background()
	sq, db, err := childClients(ctx)
	if err != nil {
		return err
	}
	cdb := newCountingDB(db)
	store, err := unique.New(cdb, c.Table, func(o *unique.Options) { o.Logger = quiet })
	if err != nil {
		return err
	}
	p, err := producer.New(sq, c.Queue)
	if err != nil {
		return err
	}
	defer p.Close(ctx)
	var tally sendTally
	var accepted, refused, failed atomic.Int64
	var firstErr atomic.Value
	t0 := time.Now()
	var wg sync.WaitGroup
	for r := range c.Rounds {
		wg.Go(func() {
			for k := range c.Keys {
				kk := (k + r*7 + c.Index*13) % c.Keys // each round its own order
				name := "key-" + strconv.Itoa(kk)
				_, err := store.Send(ctx, p, unique.Key{Name: name}, producer.Message{Body: name})
				switch {
				case err == nil:
					accepted.Add(1)
				case errors.Is(err, unique.ErrDuplicate):
					refused.Add(1)
				default:
					failed.Add(1)
					firstErr.CompareAndSwap(nil, err.Error())
				}
			}
		})
	}
	wg.Wait()
	tally.Elapsed = time.Since(t0)
	tally.Accepted, tally.Refused, tally.Errors = accepted.Load(), refused.Load(), failed.Load()
	tally.Calls, tally.Stats = cdb.snapshot(), store.Stats()
	if e := firstErr.Load(); e != nil {
		fmt.Fprintln(os.Stderr, "unique send child: first error:", e)
	}
	data, err := json.Marshal(tally)
	if err != nil {
		return err
	}
	return os.WriteFile(c.Out, data, 0o644)
}

// The acceptance, with real processes: 4 OS processes (this test
// binary, re-executed) send the same keys 10 times each, the 10 rounds of
// each at once, all 4 started together, on the SQS emulator and DynamoDB
// Local. Exactly one send per key is accepted, one worker then runs
// exactly one job per key, and no key stays held once they are settled.
// make test runs 200 keys; UNIQUE_PROCESS_KEYS=1000 is the size
// (its figures are in BENCHMARKS.md).
func TestEmulatorProcessesOneJobPerKey(t *testing.T) {
	e := newEmulator(t, false)
	keys := envInt("UNIQUE_PROCESS_KEYS", 200)
	const procs, rounds = 4, 10
	dir := t.TempDir()
	cmds := make([]*exec.Cmd, procs)
	for i := range procs {
		raw, _ := json.Marshal(sendChild{Queue: e.src, Table: e.table, Out: filepath.Join(dir, fmt.Sprint(i, ".json")), Index: i, Keys: keys, Rounds: rounds})
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = testenv.ChildEnv(t, sendChildEnv+"="+string(raw))
		cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
		cmds[i] = cmd
	}
	t0 := time.Now()
	for _, cmd := range cmds {
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	}
	for i, cmd := range cmds {
		if err := cmd.Wait(); err != nil {
			t.Fatalf("producing process %d: %v", i, err)
		}
	}
	sendTime := time.Since(t0)
	var total sendTally
	total.Calls = map[string]int64{}
	var slowest time.Duration
	for i := range procs {
		data, err := os.ReadFile(filepath.Join(dir, fmt.Sprint(i, ".json")))
		if err != nil {
			t.Fatal(err)
		}
		var one sendTally
		if err := json.Unmarshal(data, &one); err != nil {
			t.Fatal(err)
		}
		total.Accepted += one.Accepted
		total.Refused += one.Refused
		total.Errors += one.Errors
		for op, n := range one.Calls {
			total.Calls[op] += n
		}
		slowest = max(slowest, one.Elapsed)
	}
	sends := int64(keys * procs * rounds)
	if total.Errors != 0 || total.Accepted != int64(keys) || total.Refused != sends-int64(keys) {
		t.Fatalf("%d sends: %d accepted, %d refused, %d failed; want %d accepted, %d refused", sends, total.Accepted, total.Refused, total.Errors, keys, sends-int64(keys))
	}

	// One worker process's worth: run the queue, count the runs by key.
	cdb := newCountingDB(e.db)
	store, err := unique.New(cdb, e.table, func(o *unique.Options) { o.Logger = quiet })
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	ran := map[string]int{}
	t1 := time.Now()
	e.run(t, store, func(ctx context.Context, m *worker.Message) error {
		mu.Lock()
		ran[m.Body]++
		mu.Unlock()
		return nil
	}, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(ran) == keys && store.Stats().Released == int64(keys)
	})
	runTime := time.Since(t1)
	// The worker stopped once every key was released: a job run twice
	// would have had to come back after its delete, which a short wait
	// would not show; the count of runs is exact for what was received.
	for k := range keys {
		if n := ran["key-"+strconv.Itoa(k)]; n != 1 {
			t.Errorf("key-%d ran %d times, want 1", k, n)
		}
	}
	if len(ran) != keys {
		t.Errorf("%d keys ran, want %d", len(ran), keys)
	}
	if held, err := store.Held(t.Context()); err != nil || held != 0 {
		t.Errorf("Held = %d, %v; want 0 once every job is settled", held, err)
	}
	consumer := cdb.snapshot()
	writes := total.Calls["PutItem"] + total.Calls["UpdateItem"] + total.Calls["DeleteItem"] + consumer["DeleteItem"] + consumer["UpdateItem"]
	reads := total.Calls["DescribeTable"] + consumer["DescribeTable"] // control-plane calls, not billed as reads
	t.Logf("%d processes × %d rounds × %d keys = %d sends in %v (slowest process %v): %d accepted, %d refused; %d jobs ran once each in %v",
		procs, rounds, keys, sends, sendTime.Round(time.Millisecond), slowest.Round(time.Millisecond), total.Accepted, total.Refused, len(ran), runTime.Round(time.Millisecond))
	t.Logf("DynamoDB: senders %v, consumer %v; %d writes = %.2f per job (%.2f per send); %d DescribeTable",
		total.Calls, consumer, writes, float64(writes)/float64(keys), float64(writes)/float64(sends), reads)
	t.Logf("dollars per million jobs at $0.625 per million writes: $%.2f (this workload: %d sends per job)", float64(writes)/float64(keys)*0.625, sends/int64(keys))
}

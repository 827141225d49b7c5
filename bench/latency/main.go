// Command latency measures sqsworker next to a minimal hand-written SDK
// loop and gocloud.dev/pubsub's awssnssqs driver, in one interleaved run,
// against SQS backends with real per-call latency: sqstest (in memory,
// latency added by the fake) and the fauxqs emulator behind a proxy that
// adds latency to every call (a separate process, so its CPU is not the
// consumers'). It lives in its own Go module so that gocloud stays out of
// the library's go.mod.
//
// Each scenario runs rounds; each round runs every consumer in turn on a
// fresh queue of n messages, until all are handled and deleted. It reports
// per consumer the median msg/s, requests per message by API, CPU µs per
// message (this process: the consumer and its SDK client), TCP connections
// opened, and per round the ratio to sqsworker.
//
//	bash localstack/with-aws.sh bash -c 'cd bench && go run ./latency'
//
// (make bench-latency). The emulator endpoint comes from
// AWS_ENDPOINT_URL_SQS, as the rest of the repository's tests take it.
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/sqsworker/sqsworker/dlq"
	"github.com/sqsworker/sqsworker/harness/faultproxy"
	"github.com/sqsworker/sqsworker/harness/testenv"
	"github.com/sqsworker/sqsworker/sqstest"
)

type scenario struct {
	Name        string        `json:"name"`
	Backend     string        `json:"backend"` // "sqstest" or "fauxqs"
	Latency     time.Duration `json:"latency"`
	Concurrency int           `json:"concurrency"`
	Handler     time.Duration `json:"handler"`
	Visibility  int           `json:"visibility"` // seconds
	Messages    int           `json:"messages"`
	Consumers   []string      `json:"consumers"`
}

// limit is how long a consumer may take for a scenario's messages.
func (sc scenario) limit() time.Duration {
	return max(2*time.Minute, time.Duration(sc.Messages)*sc.Handler/time.Duration(max(sc.Concurrency, 1))*10)
}

type result struct {
	Scenario string           `json:"scenario"`
	Round    int              `json:"round"`
	Consumer string           `json:"consumer"`
	Seconds  float64          `json:"seconds"`
	MsgsPerS float64          `json:"msgs_per_s"`
	Requests map[string]int64 `json:"requests"`
	ReqPer   float64          `json:"requests_per_message"`
	CPUus    float64          `json:"cpu_us_per_message"`
	Dials    int64            `json:"tcp_connections"`
	Dups     int              `json:"duplicates"`
	// Steady is the throughput between the 5% and the 95% mark of the
	// messages handled: without the start-up and the last deletes.
	Steady float64            `json:"steady_msgs_per_s"`
	Extra  map[string]float64 `json:"extra,omitempty"`
	// Unfinished says why the consumer did not finish the queue in time.
	Unfinished string `json:"unfinished,omitempty"`
}

var consumers = map[string]consumer{"sqsworker": runWorker, "sdk-loop": runLoop, "gocloud": runGocloud}

func main() {
	if len(os.Args) > 1 && os.Args[1] == "proxy" {
		proxyMain(os.Args[2:])
		return
	}
	rounds := flag.Int("rounds", 3, "rounds per scenario")
	only := flag.String("only", "", "run only scenarios whose name contains this")
	out := flag.String("json", "", "also write the results as JSON to this file")
	consumersFlag := flag.String("consumers", "", "run only these consumers, comma-separated (sqsworker, sdk-loop, gocloud); all by default")
	flag.Parse()
	pick := map[string]bool{}
	for _, name := range strings.Split(*consumersFlag, ",") {
		if name = strings.TrimSpace(name); name == "" {
			continue
		}
		if consumers[name] == nil {
			fmt.Fprintf(os.Stderr, "latency: -consumers: no consumer %q; use sqsworker, sdk-loop or gocloud\n", name)
			os.Exit(2)
		}
		pick[name] = true
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, *rounds, *only, *out, pick); err != nil {
		fmt.Fprintln(os.Stderr, "latency:", err)
		os.Exit(1)
	}
}

func scenarios() []scenario {
	all := []string{"sqsworker", "sdk-loop", "gocloud"}
	mine := []string{"sqsworker", "sdk-loop"}
	return []scenario{
		{"fauxqs+15ms no-op C10", "fauxqs", 15 * time.Millisecond, 10, 0, 30, 5000, all},
		{"fauxqs+15ms no-op C20", "fauxqs", 15 * time.Millisecond, 20, 0, 30, 5000, all},
		{"fauxqs+15ms 50ms-handler C50", "fauxqs", 15 * time.Millisecond, 50, 50 * time.Millisecond, 30, 5000, all},
		{"fauxqs+0ms no-op C50", "fauxqs", 0, 50, 0, 30, 5000, all},
		{"sqstest+15ms no-op C10", "sqstest", 15 * time.Millisecond, 10, 0, 30, 5000, mine},
		{"sqstest+15ms no-op C20", "sqstest", 15 * time.Millisecond, 20, 0, 30, 5000, mine},
		{"sqstest+0ms no-op C50", "sqstest", 0, 50, 0, 30, 5000, mine},
		{"fauxqs+15ms long-jobs 6s vis2s C50", "fauxqs", 15 * time.Millisecond, 50, 6 * time.Second, 2, 200, all},
	}
}

// run runs the scenarios whose name contains only, with the consumers in
// pick (all when it is empty).
func run(ctx context.Context, rounds int, only, out string, pick map[string]bool) error {
	endpoint := os.Getenv("AWS_ENDPOINT_URL_SQS")
	var all []result
	for _, sc := range scenarios() {
		if only != "" && !strings.Contains(sc.Name, only) {
			continue
		}
		if sc.Backend == "fauxqs" && endpoint == "" {
			return fmt.Errorf("scenario %q needs the emulator: set AWS_ENDPOINT_URL_SQS (make bench-latency starts it)", sc.Name)
		}
		fmt.Printf("== %s (%d messages, %d rounds)\n", sc.Name, sc.Messages, rounds)
		for r := 1; r <= rounds; r++ {
			for _, name := range sc.Consumers {
				if len(pick) > 0 && !pick[name] {
					continue
				}
				if ctx.Err() != nil {
					return ctx.Err()
				}
				res, err := measure(ctx, sc, r, name, endpoint)
				if err != nil {
					return fmt.Errorf("%s, round %d, %s: %w", sc.Name, r, name, err)
				}
				fmt.Printf("   round %d %-9s %8.0f msg/s (steady %6.0f)  %.3f req/msg  %6.1f CPU µs/msg  %4d conns  %d dups %v %s\n",
					r, name, res.MsgsPerS, res.Steady, res.ReqPer, res.CPUus, res.Dials, res.Dups, res.Extra, res.Unfinished)
				all = append(all, res)
			}
		}
	}
	report(os.Stdout, all)
	if out != "" {
		b, _ := json.MarshalIndent(all, "", "  ")
		return os.WriteFile(out, b, 0o644)
	}
	return nil
}

// measure runs one consumer on a fresh queue of sc.Messages messages.
func measure(ctx context.Context, sc scenario, round int, name, endpoint string) (result, error) {
	res := result{Scenario: sc.Name, Round: round, Consumer: name}
	m := newMeter()
	var client sqsAPI
	var admin setupAPI
	var fake *sqstest.Fake
	if sc.Backend == "sqstest" {
		f, err := sqstest.New(func(o *sqstest.Options) { o.Latency = sc.Latency })
		if err != nil {
			return res, err
		}
		fake, client, admin = f, f, f
	} else {
		direct := newClient(endpoint, newMeter())
		admin = direct
		url := endpoint
		if sc.Latency > 0 {
			p, err := startProxy(endpoint, sc.Latency)
			if err != nil {
				return res, err
			}
			defer p.stop()
			url = p.url
		}
		client = newClient(url, m)
	}
	qname := fmt.Sprintf("lat-%d-%d", time.Now().UnixNano(), round)
	var target dlq.Target
	{
		setup, err := dlq.Setup(ctx, admin, dlq.SetupOptions{Name: qname, MaxReceiveCount: 100, VisibilityTimeout: time.Duration(sc.Visibility) * time.Second})
		if err != nil {
			return res, err
		}
		target = setup.Target()
	}
	defer func() {
		c := context.WithoutCancel(ctx)
		admin.DeleteQueue(c, &sqs.DeleteQueueInput{QueueUrl: aws.String(target.SourceURL)})
		admin.DeleteQueue(c, &sqs.DeleteQueueInput{QueueUrl: aws.String(target.DLQURL)})
	}()
	if err := testenv.Send(ctx, admin, target.SourceURL, sc.Messages); err != nil {
		return res, err
	}
	var before map[string]int // the fake's counts before the run
	if fake != nil {
		before = fake.Requests()
	}

	j := newJob(sc.Handler)
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	var extra map[string]float64
	cpu0, start := cpuTime(), time.Now()
	go func() {
		var err error
		extra, err = consumers[name](runCtx, client, target.SourceURL, sc.Concurrency, j)
		done <- err
	}()
	// Until every message is handled and gone from the queue.
	var t5, t95 time.Time
	for {
		if n := j.handled.Load(); t5.IsZero() && n >= int64(sc.Messages/20) {
			t5 = time.Now()
		} else if t95.IsZero() && n >= int64(sc.Messages*19/20) {
			t95 = time.Now()
		}
		if j.distinct() >= sc.Messages {
			if c, err := dlq.Count(ctx, admin, target.SourceURL); err == nil && c.Visible+c.InFlight+c.Delayed == 0 {
				break
			}
		}
		if ctx.Err() != nil {
			cancel()
			<-done
			return res, ctx.Err()
		}
		if time.Since(start) > sc.limit() {
			// Recorded as it stands: a consumer that cannot finish (jobs
			// run again and again) is a result, not a harness failure.
			res.Unfinished = fmt.Sprintf("not done after %v: %d of %d handled, %d runs", sc.limit(), j.distinct(), sc.Messages, j.handled.Load())
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	elapsed := time.Since(start)
	cpu := cpuTime() - cpu0
	cancel()
	if err := <-done; err != nil && ctx.Err() == nil {
		return res, err
	}
	res.Seconds = elapsed.Seconds()
	res.MsgsPerS = float64(sc.Messages) / elapsed.Seconds()
	if !t5.IsZero() && t95.After(t5) {
		res.Steady = float64(sc.Messages*9/10) / t95.Sub(t5).Seconds()
	}
	res.CPUus = float64(cpu.Microseconds()) / float64(sc.Messages)
	res.Dials = m.dials.Load()
	res.Requests = m.snapshot()
	if fake != nil {
		res.Requests = map[string]int64{}
		for k, v := range fake.Requests() {
			if n := v - before[k]; n > 0 {
				res.Requests[k] = int64(n)
			}
		}
	}
	var total int64
	for k, v := range res.Requests {
		if k != "GetQueueAttributes" && k != "GetQueueUrl" {
			total += v
		}
	}
	res.ReqPer = float64(total) / float64(sc.Messages)
	res.Dups = j.duplicates()
	res.Extra = extra
	return res, nil
}

// setupAPI is what the harness needs to make and fill queues.
type setupAPI interface {
	dlq.API
	DeleteQueue(ctx context.Context, params *sqs.DeleteQueueInput, optFns ...func(*sqs.Options)) (*sqs.DeleteQueueOutput, error)
	SendMessageBatch(ctx context.Context, params *sqs.SendMessageBatchInput, optFns ...func(*sqs.Options)) (*sqs.SendMessageBatchOutput, error)
}

func newClient(endpoint string, m *meter) *sqs.Client {
	return sqs.New(sqs.Options{
		BaseEndpoint: aws.String(endpoint), Region: "us-east-1",
		Credentials: credentials.NewStaticCredentialsProvider("test", "test", ""),
		HTTPClient:  countingDoer{next: m.client(), m: m},
	})
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// proxy is a latency proxy in a process of its own.
type proxy struct {
	url string
	cmd *exec.Cmd
}

func startProxy(upstream string, latency time.Duration) (*proxy, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(self, "proxy", upstream, latency.String())
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		cmd.Process.Kill()
		cmd.Wait()
		return nil, fmt.Errorf("the latency proxy did not start: %w", err)
	}
	return &proxy{url: strings.TrimSpace(line), cmd: cmd}, nil
}

func (p *proxy) stop() {
	p.cmd.Process.Signal(syscall.SIGTERM)
	p.cmd.Wait()
}

// proxyMain runs the latency proxy: args are the upstream URL and the
// latency; it prints its URL and serves until SIGTERM.
func proxyMain(args []string) {
	latency, err := time.ParseDuration(args[1])
	if err != nil {
		fmt.Fprintln(os.Stderr, "proxy:", err)
		os.Exit(2)
	}
	p, err := faultproxy.Start(faultproxy.Options{Upstream: args[0], Rules: map[string]faultproxy.Rule{"*": {Latency: latency}}})
	if err != nil {
		fmt.Fprintln(os.Stderr, "proxy:", err)
		os.Exit(1)
	}
	fmt.Println(p.URL)
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	<-ctx.Done()
	p.Close()
}

// report prints medians per scenario and consumer, and each consumer's
// throughput ratio to sqsworker's round by round.
func report(w io.Writer, all []result) {
	fmt.Fprintln(w, "\n| scenario | consumer | msg/s (median) | steady msg/s | ratio to sqsworker, per round | req/msg | CPU µs/msg | TCP conns | duplicates |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|---|---|---|")
	type key struct{ sc, c string }
	by := map[key][]result{}
	var order []key
	for _, r := range all {
		k := key{r.Scenario, r.Consumer}
		if _, ok := by[k]; !ok {
			order = append(order, k)
		}
		by[k] = append(by[k], r)
	}
	for _, k := range order {
		rs := by[k]
		ws := by[key{k.sc, "sqsworker"}]
		var ratios []string
		for i, r := range rs {
			if i < len(ws) {
				ratios = append(ratios, fmt.Sprintf("%.2f", r.MsgsPerS/ws[i].MsgsPerS))
			}
		}
		fmt.Fprintf(w, "| %s | %s | %.0f | %.0f | %s | %.3f | %.1f | %.0f | %.0f |\n", k.sc, k.c,
			median(rs, func(r result) float64 { return r.MsgsPerS }), median(rs, func(r result) float64 { return r.Steady }), strings.Join(ratios, " "),
			median(rs, func(r result) float64 { return r.ReqPer }),
			median(rs, func(r result) float64 { return r.CPUus }),
			median(rs, func(r result) float64 { return float64(r.Dials) }),
			median(rs, func(r result) float64 { return float64(r.Dups) }))
	}
}

func median(rs []result, f func(result) float64) float64 {
	v := make([]float64, len(rs))
	for i, r := range rs {
		v[i] = f(r)
	}
	sort.Float64s(v)
	if len(v) == 0 {
		return 0
	}
	return v[len(v)/2]
}

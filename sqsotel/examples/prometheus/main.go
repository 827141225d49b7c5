package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	otelprom "go.opentelemetry.io/otel/exporters/prometheus"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"

	"github.com/sqsworker/sqsworker/dlq"
	"github.com/sqsworker/sqsworker/retry"
	"github.com/sqsworker/sqsworker/sqsotel"
	"github.com/sqsworker/sqsworker/worker"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:9464", "where to serve /metrics, /livez, /readyz and /debug/sqsworker/stats")
	hold := flag.Duration("hold", 0, "keep serving this long after the jobs are done, to look at the endpoints")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	cfg, err := config.LoadDefaultConfig(ctx)
	if err == nil {
		_, err = run(ctx, os.Stdout, sqs.NewFromConfig(cfg), *addr, *hold)
	}
	stop()
	if err != nil && !errors.Is(err, context.Canceled) {
		fmt.Fprintf(os.Stderr, "prometheus: %v\n", err)
		os.Exit(1)
	}
}

// client is what the example asks of SQS.
type client interface {
	worker.API
	dlq.API
	SendMessageBatch(ctx context.Context, params *sqs.SendMessageBatchInput, optFns ...func(*sqs.Options)) (*sqs.SendMessageBatchOutput, error)
	DeleteQueue(ctx context.Context, params *sqs.DeleteQueueInput, optFns ...func(*sqs.Options)) (*sqs.DeleteQueueOutput, error)
}

const jobs = 50

// run sets up a queue pair, serves the worker's metrics and health on addr,
// handles jobs (one in ten fails once, one is poison), scrapes its own
// /metrics, prints a few series, and deletes the queues. It returns the
// scraped metric families.
func run(ctx context.Context, out io.Writer, c client, addr string, hold time.Duration) (map[string]*dto.MetricFamily, error) {
	// The Prometheus side: OTel's exporter is a reader of an OTel meter
	// provider, and registers on a client_golang registry that promhttp
	// serves.
	registry := prometheus.NewRegistry()
	exporter, err := otelprom.New(otelprom.WithRegisterer(registry))
	if err != nil {
		return nil, err
	}
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(exporter))
	defer mp.Shutdown(context.WithoutCancel(ctx))
	ins, err := sqsotel.New(func(o *sqsotel.Options) { o.MeterProvider = mp })
	if err != nil {
		return nil, err
	}

	name := "sqsworker-prometheus-" + strconv.FormatInt(time.Now().UnixNano(), 36)
	target, err := dlq.Setup(ctx, c, dlq.SetupOptions{Name: name})
	if err != nil {
		return nil, err
	}
	defer func() {
		dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		defer cancel()
		for _, u := range []string{target.QueueURL, target.DLQURL} {
			_, _ = c.DeleteQueue(dctx, &sqs.DeleteQueueInput{QueueUrl: aws.String(u)})
		}
	}()

	h := worker.HandlerFunc(func(ctx context.Context, m *worker.Message) error {
		n, _ := strconv.Atoi(m.Body)
		switch {
		case n == 7:
			return retry.Permanent(errors.New("malformed order"))
		case n%10 == 3 && m.Attempt == 1:
			return errors.New("payment service busy")
		}
		time.Sleep(time.Duration(n%5) * 10 * time.Millisecond) // the work
		return nil
	})
	policy := retry.PolicyFunc(func(attempt int) (time.Duration, bool) { return time.Second, attempt < 3 })
	w, err := worker.New(c, target.QueueURL, worker.Chain(h, ins.Middleware()), func(o *worker.Options) {
		o.OnSettled = ins.OnSettled(nil)
		o.RetryPolicy = policy
		o.WaitTime = time.Second
	})
	if err != nil {
		return nil, err
	}
	reg, err := ins.ObserveWorker(w)
	if err != nil {
		return nil, err
	}
	defer reg.Unregister()

	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(registry, promhttp.HandlerOpts{}))
	mux.Handle("GET /livez", w.LivenessHandler())
	mux.Handle("GET /readyz", w.ReadinessHandler())
	mux.Handle("GET /debug/sqsworker/stats", w.StatsHandler())
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go srv.Serve(ln)
	defer srv.Close()
	base := "http://" + ln.Addr().String()
	fmt.Fprintf(out, "serving %s/metrics, /livez, /readyz and /debug/sqsworker/stats\n", base)

	runCtx, stopWorker := context.WithCancel(ctx)
	defer stopWorker()
	done := make(chan error, 1)
	go func() { done <- w.Run(runCtx) }()

	for first := 0; first < jobs; first += 10 {
		in := &sqs.SendMessageBatchInput{QueueUrl: aws.String(target.QueueURL)}
		for i := first; i < first+10; i++ {
			in.Entries = append(in.Entries, types.SendMessageBatchRequestEntry{Id: aws.String(strconv.Itoa(i)), MessageBody: aws.String(strconv.Itoa(i))})
		}
		if _, err := c.SendMessageBatch(ctx, in); err != nil {
			return nil, fmt.Errorf("sending jobs: %w", err)
		}
	}
	fmt.Fprintf(out, "sent %d jobs\n", jobs)

	deadline := time.Now().Add(60 * time.Second)
	for {
		s := w.Stats()
		if s.Deleted+s.DeadLettered >= jobs && s.InFlight == 0 {
			break
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("jobs not settled after 60 s: %+v", s)
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case err := <-done:
			return nil, fmt.Errorf("the worker stopped early: %v", err)
		case <-time.After(50 * time.Millisecond):
		}
	}
	if code, err := status(ctx, base+"/readyz"); err != nil || code != http.StatusOK {
		return nil, fmt.Errorf("/readyz answered %d (%v), want 200 while receiving", code, err)
	}
	if hold > 0 {
		fmt.Fprintf(out, "jobs done; serving for %v (Ctrl-C to stop)\n", hold)
		select {
		case <-ctx.Done():
		case <-time.After(hold):
		}
	}
	stopWorker()
	if err := <-done; err != nil {
		return nil, err
	}

	families, err := scrape(ctx, base+"/metrics")
	if err != nil {
		return nil, err
	}
	for _, name := range []string{
		"sqsworker_messages_total", "sqsworker_dead_letters_total", "sqsworker_sqs_requests_total",
		"sqsworker_sqs_requests_per_message", "sqsworker_cost_usd_per_million_messages",
	} {
		printFamily(out, families[name])
	}
	if f := families["messaging_process_duration_seconds"]; f != nil {
		var n uint64
		for _, m := range f.Metric {
			n += m.GetHistogram().GetSampleCount()
		}
		fmt.Fprintf(out, "messaging_process_duration_seconds: %d handler runs\n", n)
	}
	return families, nil
}

// status GETs url and returns the status code.
func status(ctx context.Context, url string) (int, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return 0, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err
	}
	resp.Body.Close()
	return resp.StatusCode, nil
}

// scrape GETs url and parses the text exposition format with Prometheus's
// own parser.
func scrape(ctx context.Context, url string) (map[string]*dto.MetricFamily, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", string(expfmt.NewFormat(expfmt.TypeTextPlain)))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	parser := expfmt.NewTextParser(model.LegacyValidation)
	families, err := parser.TextToMetricFamilies(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("parsing /metrics: %w", err)
	}
	return families, nil
}

// printFamily prints a counter's or gauge's series, one line each.
func printFamily(out io.Writer, f *dto.MetricFamily) {
	if f == nil {
		return
	}
	var lines []string
	for _, m := range f.Metric {
		var labels []string
		for _, l := range m.Label {
			switch l.GetName() {
			case "messaging_system", "messaging_destination_name", "otel_scope_name", "otel_scope_version", "otel_scope_schema_url":
				continue
			}
			labels = append(labels, l.GetName()+"="+strconv.Quote(l.GetValue()))
		}
		v := m.GetCounter().GetValue() + m.GetGauge().GetValue()
		lines = append(lines, fmt.Sprintf("%s{%s} %g", f.GetName(), strings.Join(labels, ","), v))
	}
	slices.Sort(lines)
	for _, l := range lines {
		fmt.Fprintln(out, l)
	}
}

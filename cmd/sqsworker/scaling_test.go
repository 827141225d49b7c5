package main

import (
	"encoding/json"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/sqsworker/sqsworker/worker"
)

// doc is a parsed template, read by path: dig(d, "spec", "triggers", 0,
// "metadata", "queueLength").
type doc = map[string]any

func dig(t *testing.T, v any, path ...any) any {
	t.Helper()
	for _, p := range path {
		switch k := p.(type) {
		case string:
			m, ok := v.(map[string]any)
			if !ok {
				t.Fatalf("%v: not a mapping at %q", path, k)
			}
			if v, ok = m[k]; !ok {
				t.Fatalf("%v: no key %q in %v", path, k, m)
			}
		case int:
			s, ok := v.([]any)
			if !ok || k >= len(s) {
				t.Fatalf("%v: no item %d", path, k)
			}
			v = s[k]
		}
	}
	return v
}

func parseYAML(t *testing.T, out string) doc {
	t.Helper()
	var d doc
	if err := yaml.Unmarshal([]byte(out), &d); err != nil {
		t.Fatalf("the output is not YAML: %v\n%s", err, out)
	}
	return d
}

func TestScalingKEDA(t *testing.T) {
	h := newHarness(t)
	// 16 slots / 200 ms = 80 messages/s; within 30 s: 2,400 per worker.
	code, out, errOut := h.run(t, "template", "--scaling", "keda", "--handler-time", "200ms", "--concurrency", "16",
		"--target-latency", "30s", "--namespace", "jobs", "--max", "20", "--trigger-auth", "sqs-reader",
		"https://sqs.eu-west-1.amazonaws.com/123456789012/Orders")
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	golden(t, "scaling-keda", out)
	d := parseYAML(t, out)
	if dig(t, d, "apiVersion") != "keda.sh/v1alpha1" || dig(t, d, "kind") != "ScaledObject" {
		t.Fatalf("not a ScaledObject: %v", d)
	}
	for path, want := range map[string]any{
		"metadata.name": "orders", "metadata.namespace": "jobs", "spec.scaleTargetRef.name": "orders",
		"spec.minReplicaCount": 0, "spec.maxReplicaCount": 20,
	} {
		var p []any
		for _, k := range strings.Split(path, ".") {
			p = append(p, k)
		}
		if got := dig(t, d, p...); got != want {
			t.Errorf("%s = %v, want %v", path, got, want)
		}
	}
	trig := dig(t, d, "spec", "triggers", 0)
	if dig(t, trig, "type") != "aws-sqs-queue" || dig(t, trig, "authenticationRef", "name") != "sqs-reader" {
		t.Errorf("trigger = %v", trig)
	}
	// KEDA's trigger metadata are strings.
	for k, want := range map[string]string{
		"queueURL": "https://sqs.eu-west-1.amazonaws.com/123456789012/Orders", "awsRegion": "eu-west-1",
		"queueLength": "2400", "activationQueueLength": "0", "scaleOnInFlight": "false", "scaleOnDelayed": "false",
	} {
		if got := dig(t, trig, "metadata", k); got != want {
			t.Errorf("metadata.%s = %#v, want %q", k, got, want)
		}
	}
	for _, why := range []string{"floor(capacity 80 messages/s x target latency 30s)", "terminationGracePeriodSeconds to at least 40", "keda#1663"} {
		if !strings.Contains(out, why) {
			t.Errorf("the output does not say %q", why)
		}
	}
}

func TestScalingECS(t *testing.T) {
	h := newHarness(t)
	code, out, errOut := h.run(t, "template", "--scaling=ecs", "--capacity", "12.5", "--target-latency", "2m",
		"--cluster", "prod", "--service", "orders-worker", "--max", "40", "--shutdown-timeout", "60s", "orders")
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	golden(t, "scaling-ecs", out)
	checkECS := func(d doc) {
		t.Helper()
		target := dig(t, d, "Resources", "ScalableTarget", "Properties")
		if dig(t, target, "ResourceId") != "service/prod/orders-worker" || dig(t, target, "ScalableDimension") != "ecs:service:DesiredCount" ||
			num64(dig(t, target, "MinCapacity")) != 1 || num64(dig(t, target, "MaxCapacity")) != 40 {
			t.Errorf("ScalableTarget = %v", target)
		}
		cfg := dig(t, d, "Resources", "BacklogPerTaskPolicy", "Properties", "TargetTrackingScalingPolicyConfiguration")
		// 12.5 messages/s x 120 s.
		if got := num64(dig(t, cfg, "TargetValue")); got != 1500 {
			t.Errorf("TargetValue = %v, want 1500", got)
		}
		metrics := dig(t, cfg, "CustomizedMetricSpecification", "Metrics").([]any)
		if len(metrics) != 3 {
			t.Fatalf("Metrics = %v", metrics)
		}
		byID := map[string]any{}
		for _, m := range metrics {
			byID[dig(t, m, "Id").(string)] = m
		}
		if dig(t, byID["m1"], "MetricStat", "Metric", "MetricName") != "ApproximateNumberOfMessagesVisible" ||
			dig(t, byID["m1"], "MetricStat", "Metric", "Dimensions", 0, "Value") != "orders" ||
			dig(t, byID["m2"], "MetricStat", "Metric", "MetricName") != "RunningTaskCount" ||
			dig(t, byID["m2"], "MetricStat", "Metric", "Namespace") != "ECS/ContainerInsights" ||
			dig(t, byID["e1"], "Expression") != "m1 / m2" || dig(t, byID["e1"], "ReturnData") != true ||
			dig(t, byID["m1"], "ReturnData") != false {
			t.Errorf("Metrics = %v", metrics)
		}
		if dig(t, d, "Resources", "BacklogPerTaskPolicy", "Properties", "ScalingTargetId", "Ref") != "ScalableTarget" {
			t.Error("the policy does not refer to the scalable target")
		}
	}
	checkECS(parseYAML(t, out))
	if !strings.Contains(out, "stopTimeout to 70") {
		t.Error("the output does not give the container's stopTimeout (60 s + 5 s flush + 5 s)")
	}
	// The same as JSON.
	code, out, errOut = h.run(t, "template", "--scaling", "ecs", "--capacity", "12.5", "--target-latency", "2m",
		"--cluster", "prod", "--service", "orders-worker", "--max", "40", "orders", "-o", "json")
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var d doc
	if err := json.Unmarshal([]byte(out), &d); err != nil {
		t.Fatalf("-o json is not JSON: %v", err)
	}
	checkECS(d)
}

// num64 reads a number parsed from YAML (int) or JSON (float64).
func num64(v any) float64 {
	switch n := v.(type) {
	case int:
		return float64(n)
	case float64:
		return n
	}
	return math.NaN()
}

func TestScalingLambda(t *testing.T) {
	h := newHarness(t)
	code, out, errOut := h.run(t, "template", "--scaling", "lambda", "--handler-time", "120ms", "--concurrency", "4",
		"--function", "orders-fn", "--rate", "200", "--batch-size", "50", "--batch-window", "2s",
		"--visibility-timeout", "5m", "--target-latency", "10s", "arn:aws:sqs:eu-west-1:123456789012:orders")
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	golden(t, "scaling-lambda", out)
	p := dig(t, parseYAML(t, out), "Resources", "EventSourceMapping", "Properties")
	// A batch: ceil(50/4) x 120 ms = 1.56 s; 200/s needs 200 x 1.56 / 50 = 6.24 -> 7 batches at once.
	for k, want := range map[string]any{
		"FunctionName": "orders-fn", "EventSourceArn": "arn:aws:sqs:eu-west-1:123456789012:orders",
		"BatchSize": 50, "MaximumBatchingWindowInSeconds": 2,
	} {
		if got := dig(t, p, k); got != want {
			t.Errorf("%s = %v, want %v", k, got, want)
		}
	}
	if dig(t, p, "FunctionResponseTypes", 0) != "ReportBatchItemFailures" || dig(t, p, "ScalingConfig", "MaximumConcurrency") != 7 {
		t.Errorf("mapping = %v", p)
	}
	if !strings.Contains(out, "Timeout to 4 s") {
		t.Error("the output does not give the function timeout (twice 1.56 s, rounded up)")
	}

	// Provisioned mode, on a FIFO queue named by its name: pollers instead
	// of MaximumConcurrency, the ARN built by CloudFormation, no window.
	code, out, errOut = h.run(t, "template", "--scaling", "lambda", "--handler-time", "1s", "--function", "ledger-fn",
		"--max-concurrency", "95", "--provisioned", "--min-pollers", "4", "--batch-size", "10", "ledger.fifo")
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	golden(t, "scaling-lambda-provisioned", out)
	p = dig(t, parseYAML(t, out), "Resources", "EventSourceMapping", "Properties")
	m := p.(map[string]any)
	if _, ok := m["ScalingConfig"]; ok {
		t.Error("provisioned mode with ScalingConfig")
	}
	if _, ok := m["MaximumBatchingWindowInSeconds"]; ok {
		t.Error("a batching window on a FIFO queue")
	}
	if dig(t, p, "ProvisionedPollerConfig", "MinimumPollers") != 4 || dig(t, p, "ProvisionedPollerConfig", "MaximumPollers") != 10 ||
		dig(t, p, "EventSourceArn", "Fn::Sub") != "arn:${AWS::Partition}:sqs:${AWS::Region}:${AWS::AccountId}:ledger.fifo" {
		t.Errorf("mapping = %v", p)
	}
	// 10 records one at a time at 1 s: 10 s a batch, a 21 s timeout, over
	// the default visibility timeout's advice (6 x 21 s).
	if !strings.Contains(out, "Timeout to 21 s") || !strings.Contains(out, "below the 2m6s AWS advises") {
		t.Errorf("the output does not give the timeout and the visibility advice:\n%s", out)
	}
}

// The measurement comes from a running worker's StatsHandler, or a file
// of its Stats.
func TestScalingFromWorkerStats(t *testing.T) {
	s := worker.Stats{Concurrency: 8, HandlerRuns: 1000, HandlerTime: 400 * time.Second, MeanHandlerTime: 400 * time.Millisecond, Capacity: 20,
		Requests: map[string]int64{"GetQueueAttributes": 2, "ReceiveMessage": 130, "DeleteMessageBatch": 100}}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_ = json.NewEncoder(w).Encode(s)
	}))
	defer srv.Close()
	file := filepath.Join(t.TempDir(), "stats.json")
	data, _ := json.Marshal(s)
	if err := os.WriteFile(file, data, 0o644); err != nil {
		t.Fatal(err)
	}
	h := newHarness(t)
	for _, src := range []string{srv.URL, file} {
		code, out, errOut := h.run(t, "template", "--scaling", "keda", "--stats", src, "--target-latency", "30s", "--region", "us-east-1", "orders")
		if code != exitOK {
			t.Fatalf("%s: exit %d: %s", src, code, errOut)
		}
		// 20 messages/s x 30 s.
		if got := dig(t, parseYAML(t, out), "spec", "triggers", 0, "metadata", "queueLength"); got != "600" {
			t.Errorf("%s: queueLength = %v, want 600", src, got)
		}
		if !strings.Contains(out, "Concurrency 8 / MeanHandlerTime 400ms over 1000 handler runs") {
			t.Errorf("%s: the output does not say where the capacity came from", src)
		}
	}
	// Lambda takes the handler time from the stats, and the function's own
	// concurrency from --concurrency: ceil(10 / 4) x 400 ms = 1.2 s a batch,
	// 100/s needs ceil(100 x 1.2 / 10) = 12 batches at once.
	code, out, errOut := h.run(t, "template", "--scaling", "lambda", "--stats", file, "--concurrency", "4", "--rate", "100", "--function", "fn", "orders")
	if code != exitOK {
		t.Fatalf("lambda from stats: exit %d: %s", code, errOut)
	}
	if got := dig(t, parseYAML(t, out), "Resources", "EventSourceMapping", "Properties", "ScalingConfig", "MaximumConcurrency"); got != 12 {
		t.Errorf("MaximumConcurrency = %v, want 12", got)
	}
	// The handler time bounds the target latency here too.
	code, _, errOut = h.run(t, "template", "--scaling", "ecs", "--stats", file, "--target-latency", "300ms", "--cluster", "c", "--service", "s", "orders")
	if code != exitUsage || !strings.Contains(errOut, "below the mean handler time 400ms") {
		t.Errorf("exit %d, %q; want the target latency refused", code, errOut)
	}
	// A worker that has not handled anything yet has no capacity to give.
	empty := filepath.Join(t.TempDir(), "empty.json")
	if err := os.WriteFile(empty, []byte(`{"Concurrency": 8, "Requests": {"GetQueueAttributes": 2}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, errOut = h.run(t, "template", "--scaling", "keda", "--stats", empty, "--target-latency", "30s", "--region", "us-east-1", "orders")
	if code != exitUsage || !strings.Contains(errOut, "no handler runs yet") {
		t.Errorf("exit %d, %q; want the empty measurement refused", code, errOut)
	}
}

func TestScalingBadInputs(t *testing.T) {
	// No region in the environment either: a bare queue name has none.
	t.Setenv("AWS_REGION", "")
	t.Setenv("AWS_DEFAULT_REGION", "")
	keda := []string{"template", "--scaling", "keda", "--region", "us-east-1"}
	ecs := []string{"template", "--scaling", "ecs", "--cluster", "c", "--service", "s"}
	lambda := []string{"template", "--scaling", "lambda", "--function", "fn", "--handler-time", "100ms", "--rate", "50"}
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"latency below the handler time", append(keda, "--handler-time", "2s", "--target-latency", "1s", "q"), "--target-latency 1s is below the mean handler time 2s"},
		{"no target latency", append(keda, "--handler-time", "2s", "q"), "--target-latency is required"},
		{"not one message within the latency", append(keda, "--capacity", "0.5", "--target-latency", "1s", "q"), "not one whole message"},
		{"no measurement", append(keda, "--target-latency", "1s", "q"), "give one measurement"},
		{"two measurements", append(keda, "--capacity", "3", "--handler-time", "1s", "--target-latency", "1s", "q"), "give one measurement"},
		{"keda without a region", []string{"template", "--scaling", "keda", "--capacity", "3", "--target-latency", "10s", "q"}, "needs the queue's region"},
		{"unknown platform", []string{"template", "--scaling", "nomad", "--capacity", "3", "--target-latency", "10s", "q"}, "use keda, ecs or lambda"},
		{"ecs from zero tasks", append(ecs, "--capacity", "3", "--target-latency", "10s", "--min", "0", "q"), "RunningTaskCount"},
		{"ecs drain over Fargate's 120 s", append(ecs, "--capacity", "3", "--target-latency", "10s", "--shutdown-timeout", "2m", "q"), "more than the 2m0s ECS gives"},
		{"fifo batch over 10", append(lambda, "--batch-size", "11", "--batch-window", "1s", "q.fifo"), "a FIFO queue's event source mapping takes at most 10"},
		{"fifo batch window", append(lambda, "--batch-window", "2s", "q.fifo"), "has no batching window"},
		{"batch over 10 without a window", append(lambda, "--batch-size", "100", "q"), "needs a batching window of at least 1s"},
		{"function timeout over the visibility", append(lambda, "--function-timeout", "45s", "q"), "exceeds the queue's visibility timeout 30s"},
		{"function timeout under a batch", append(lambda, "--function-timeout", "500ms", "--visibility-timeout", "1m", "q"), "shorter than a batch's measured time 1s"},
		{"lambda from a capacity", []string{"template", "--scaling", "lambda", "--function", "fn", "--capacity", "10", "--rate", "5", "q"}, "lambda needs the time per message"},
		{"lambda without a rate", []string{"template", "--scaling", "lambda", "--function", "fn", "--handler-time", "1s", "q"}, "give --rate"},
		{"concurrency past 1,000", append(lambda, "--rate", "100000", "q"), "use larger batches, or --provisioned"},
		{"pollers out of range", append(lambda, "--provisioned", "--min-pollers", "1", "q"), "MinimumPollers 2 to 200"},
		{"window past the target latency", append(lambda, "--batch-size", "20", "--batch-window", "5s", "--target-latency", "5s", "--visibility-timeout", "1m", "q"), "is not below --target-latency"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			code, out, errOut := h.run(t, tc.args...)
			if code != exitUsage || out != "" || !strings.Contains(errOut, tc.want) {
				t.Errorf("exit %d, stdout %q, stderr %q; want exit 2 saying %q", code, out, errOut, tc.want)
			}
		})
	}
}

// scaleOnInFlight counts the messages hidden for a retry's backoff as work:
// during a downstream outage KEDA would scale to the maximum with idle pods
// (issue 37). It is off unless asked for, and the template says what it
// counts.
func TestScalingKEDAInFlightCountsRetries(t *testing.T) {
	h := newHarness(t)
	args := []string{"template", "--scaling", "keda", "--capacity", "80", "--target-latency", "30s", "https://sqs.eu-west-1.amazonaws.com/123456789012/Orders"}
	code, out, errOut := h.run(t, args...)
	if code != exitOK || errOut != "" {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if got := dig(t, parseYAML(t, out), "spec", "triggers", 0, "metadata", "scaleOnInFlight"); got != "false" {
		t.Errorf("scaleOnInFlight = %v by default; want false", got)
	}
	if !strings.Contains(out, "hidden until their retry") || !strings.Contains(out, "maxReplicaCount with pods idle") {
		t.Errorf("the template does not say what scaleOnInFlight counts:\n%s", out)
	}
	code, out, _ = h.run(t, append([]string{args[0], args[1], args[2], "--count-in-flight"}, args[3:]...)...)
	if got := dig(t, parseYAML(t, out), "spec", "triggers", 0, "metadata", "scaleOnInFlight"); code != exitOK || got != "true" {
		t.Errorf("--count-in-flight: exit %d, scaleOnInFlight = %v; want true", code, got)
	}
}

// A capacity no worker plausibly has (issue 37: a no-op handler's
// unbounded Stats.Capacity made queueLength "39202977") is warned of.
func TestScalingWarnsOfAnImplausibleCapacity(t *testing.T) {
	h := newHarness(t)
	code, out, errOut := h.run(t, "template", "--scaling", "keda", "--capacity", "1306765.9", "--target-latency", "30s", "https://sqs.eu-west-1.amazonaws.com/123456789012/Orders")
	if code != exitOK || !strings.Contains(out, `queueLength: "39202977"`) {
		t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
	}
	if !strings.Contains(errOut, "warning: the capacity, 1306765.9 messages/s per worker") || !strings.Contains(errOut, "would not scale out") {
		t.Errorf("no warning of the implausible capacity on stderr: %q", errOut)
	}
	_, _, errOut = h.run(t, "template", "--scaling", "keda", "--capacity", "800", "--target-latency", "30s", "https://sqs.eu-west-1.amazonaws.com/123456789012/Orders")
	if errOut != "" {
		t.Errorf("a plausible capacity is warned of: %q", errOut)
	}
}

package main

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"math"
	"net/url"
	"os"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/sqsworker/sqsworker/queueref"
)

// The scaling templates: `sqsworker template --scaling keda|ecs|lambda`.
// Every number in them comes from a measurement (worker.Stats, or the
// flags that stand for one) and the user's target latency, and the output
// says how in comments. The platforms' field names and limits follow their
// documentation:
//
//   - KEDA, "AWS SQS Queue" scaler (keda.sh/docs/latest/scalers/aws-sqs):
//     queueURL, queueLength (default 5), activationQueueLength (default 0),
//     awsRegion, scaleOnInFlight (default true: visible + not visible),
//     scaleOnDelayed (default false); the ScaledObject spec (scaleTargetRef,
//     pollingInterval, cooldownPeriod, minReplicaCount, maxReplicaCount,
//     triggers, authenticationRef).
//   - Application Auto Scaling User Guide, "Create a target tracking scaling
//     policy for Application Auto Scaling using metric math", example
//     "Amazon SQS queue backlog per task": m1 = AWS/SQS
//     ApproximateNumberOfMessagesVisible (QueueName), m2 =
//     ECS/ContainerInsights RunningTaskCount (ClusterName, ServiceName),
//     e1 = m1 / m2 with ReturnData; CloudFormation's
//     AWS::ApplicationAutoScaling::ScalingPolicy
//     TargetTrackingScalingPolicyConfiguration.CustomizedMetricSpecification
//     .Metrics (TargetTrackingMetricDataQuery: Id, Label, MetricStat,
//     Expression, ReturnData).
//   - Lambda Developer Guide, "Lambda parameters for Amazon SQS event
//     source mappings" and "Creating and configuring an Amazon SQS event
//     source mapping": BatchSize (standard up to 10,000, FIFO up to 10),
//     MaximumBatchingWindowInSeconds (0 to 300; none on FIFO; a batch over
//     10 needs at least 1 s), FunctionResponseTypes ReportBatchItemFailures,
//     ScalingConfig.MaximumConcurrency (2 to 1,000), ProvisionedPollerConfig
//     MinimumPollers (2 to 200) and MaximumPollers (2 to 2,000), each poller
//     up to 10 concurrent invokes; the function timeout at most the queue's
//     visibility timeout (Lambda refuses the mapping otherwise), and the
//     visibility timeout at least six times the function timeout.

// The platforms' limits the templates check.
const (
	fargateMaxStopTimeout   = 120 * time.Second // ECS container stopTimeout on Fargate
	k8sDefaultGrace         = 30 * time.Second  // Kubernetes' default terminationGracePeriodSeconds
	lambdaMaxTimeout        = 15 * time.Minute
	lambdaMaxWindow         = 300 * time.Second
	lambdaMaxBatch          = 10_000
	lambdaMaxBatchNoWindow  = 10
	lambdaMinConcurrency    = 2
	lambdaMaxConcurrency    = 1000
	lambdaMinPollers        = 2
	lambdaMaxMinPollers     = 200
	lambdaMaxPollers        = 2000
	lambdaInvokesPerPoller  = 10
	lambdaScaleUpStandard   = 300 // concurrent batches added a minute, standard mode
	lambdaScaleUpProvision  = 1000
	lambdaVisibilityPerTime = 6 // the visibility timeout AWS advises, in function timeouts
	drainSlack              = 5 * time.Second
)

// scalingHelp is the help of `template --scaling`.
const scalingHelp = `Prints a scaling configuration for the workers of QUEUE, with every number
derived from a measured capacity and a target latency, and a comment saying
where it came from:

  --scaling keda    a KEDA ScaledObject (aws-sqs-queue trigger): queueLength,
                    activation, scale to zero, in-flight and delayed counting
  --scaling ecs     CloudFormation for ECS service auto scaling: target
                    tracking on backlog per task (metric math on
                    ApproximateNumberOfMessagesVisible / RunningTaskCount)
  --scaling lambda  CloudFormation for a Lambda SQS event source mapping
                    (sqslambda): batch size and window, partial batch
                    responses, MaximumConcurrency or provisioned pollers, the
                    function timeout checked against the visibility timeout

The measurement, one of:
  --stats SOURCE             a running worker's StatsHandler URL, or a file of
                             worker.Stats JSON ("-": stdin): Capacity,
                             MeanHandlerTime, Concurrency
  --handler-time D           the mean time a message holds a handler slot, with
                             --concurrency (the worker's Options.Concurrency,
                             default 10; for lambda, sqslambda's, default 1)
  --capacity N               messages per second one worker takes (keda, ecs)

keda and ecs need --target-latency: the longest a message should wait in the
queue. One worker clears capacity x latency messages in that time, so that is
the backlog per worker to scale on (KEDA's queueLength, ECS's target value).
A target below the mean handler time cannot be met and is refused.

--shutdown-timeout and --flush-timeout are the worker's Options (default 30s
and 5s): the stop budget (ECS stopTimeout, Kubernetes
terminationGracePeriodSeconds) must cover their sum, and Fargate allows at
most 120s.

YAML by default; -o json drops the comments. Nothing calls AWS.`

// scalingFlagged reports whether args ask for a scaling template.
func scalingFlagged(args []string) bool {
	for _, a := range args {
		if a == "--" {
			return false
		}
		name, _, _ := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if strings.HasPrefix(a, "-") && name == "scaling" {
			return true
		}
	}
	return false
}

// scalingOptions are the inputs of a scaling template.
type scalingOptions struct {
	kind  string
	queue queueRef

	// The measurement.
	stats       string
	capacity    float64
	handlerTime time.Duration
	concurrency int

	latency          time.Duration
	shutdown, flush  time.Duration
	name, namespace  string
	minCount         int
	maxCount         int
	activation       int
	countDelayed     bool
	countInFlight    bool
	triggerAuth      string
	cluster, service string
	outCooldown      time.Duration
	inCooldown       time.Duration

	function        string
	batchSize       int
	window          time.Duration
	functionTimeout time.Duration
	visibility      time.Duration
	rate            float64
	maxConcurrency  int
	provisioned     bool
	minPollers      int
	maxPollers      int
}

// measured is the capacity a template is derived from, and where it came
// from, for the comments.
type measured struct {
	capacity    float64       // messages per second one worker takes
	handlerTime time.Duration // mean time a message holds a slot; 0: unknown
	concurrency int
	source      string // where the capacity came from
	timeSource  string // where the handler time came from (lambda)
}

func runScaling(a *app, ctx context.Context, cmd *command, args []string) int {
	scmd := &command{path: cmd.path, args: "--scaling keda|ecs|lambda QUEUE", help: scalingHelp}
	fs := a.flags(scmd)
	out := outputFlag(fs)
	var o scalingOptions
	fs.StringVar(&o.kind, "scaling", "", "keda, ecs or lambda")
	fs.StringVar(&o.stats, "stats", "", "the measurement: a worker's StatsHandler URL, a worker.Stats JSON file, or - for stdin")
	fs.Float64Var(&o.capacity, "capacity", 0, "the measurement: messages per second one worker takes (keda, ecs)")
	fs.Var(durationValue{&o.handlerTime}, "handler-time", "the measurement: mean time a message holds a handler slot")
	fs.IntVar(&o.concurrency, "concurrency", 0, "with --handler-time: handler slots per worker (default 10; lambda: records at once per invocation, default 1)")
	fs.Var(durationValue{&o.latency}, "target-latency", "keda, ecs: the longest a message should wait in the queue (lambda: optional, checked)")
	fs.Var(durationValue{&o.shutdown}, "shutdown-timeout", "the worker's Options.ShutdownTimeout (default 30s)")
	fs.Var(durationValue{&o.flush}, "flush-timeout", "the worker's Options.FlushTimeout (default 5s)")
	fs.StringVar(&o.name, "name", "", "keda: the ScaledObject and its Deployment (default: the queue's name, lowercased)")
	fs.StringVar(&o.namespace, "namespace", "", "keda: the Kubernetes namespace")
	region := fs.String("region", "", "keda: the queue's region (default: from the queue's URL or ARN, else AWS_REGION or AWS_DEFAULT_REGION)")
	fs.IntVar(&o.minCount, "min", 0, "keda: minReplicaCount (default 0: scale to zero); ecs: MinCapacity (default 1)")
	fs.IntVar(&o.maxCount, "max", 10, "keda: maxReplicaCount; ecs: MaxCapacity")
	fs.IntVar(&o.activation, "activation", 0, "keda: activationQueueLength, the messages that wake a fleet scaled to zero (0: the first one)")
	fs.BoolVar(&o.countDelayed, "count-delayed", false, "keda: scaleOnDelayed, count delayed messages as backlog")
	fs.BoolVar(&o.countInFlight, "count-in-flight", false, "keda: scaleOnInFlight, count in-flight messages (running, or hidden until their retry) as backlog")
	fs.StringVar(&o.triggerAuth, "trigger-auth", "", "keda: the TriggerAuthentication holding the AWS identity")
	fs.StringVar(&o.cluster, "cluster", "", "ecs: the cluster's name")
	fs.StringVar(&o.service, "service", "", "ecs: the service's name")
	o.outCooldown, o.inCooldown = time.Minute, 5*time.Minute
	fs.Var(durationValue{&o.outCooldown}, "scale-out-cooldown", "ecs: ScaleOutCooldown (default 1m)")
	fs.Var(durationValue{&o.inCooldown}, "scale-in-cooldown", "ecs: ScaleInCooldown (default 5m)")
	fs.StringVar(&o.function, "function", "", "lambda: the function's name or ARN")
	fs.IntVar(&o.batchSize, "batch-size", 10, "lambda: BatchSize")
	fs.Var(durationValue{&o.window}, "batch-window", "lambda: MaximumBatchingWindowInSeconds (default 0)")
	fs.Var(durationValue{&o.functionTimeout}, "function-timeout", "lambda: the function's timeout (default: twice a batch's measured time, at least 3s)")
	o.visibility = 30 * time.Second
	fs.Var(durationValue{&o.visibility}, "visibility-timeout", "lambda: the queue's VisibilityTimeout (default 30s, SQS's)")
	fs.Float64Var(&o.rate, "rate", 0, "lambda: the peak arrival rate, messages per second (sizes the concurrency)")
	fs.IntVar(&o.maxConcurrency, "max-concurrency", 0, "lambda: ScalingConfig.MaximumConcurrency (default: from --rate)")
	fs.BoolVar(&o.provisioned, "provisioned", false, "lambda: provisioned mode (ProvisionedPollerConfig) instead of MaximumConcurrency")
	fs.IntVar(&o.minPollers, "min-pollers", lambdaMinPollers, "lambda, --provisioned: MinimumPollers")
	fs.IntVar(&o.maxPollers, "max-pollers", 0, "lambda, --provisioned: MaximumPollers (default: from --rate or --max-concurrency)")
	pos, code, ok := a.parseWithOutput(scmd, fs, args, 1, 1, out)
	if !ok {
		return code
	}
	var err error
	if o.queue, err = parseQueueRef(pos[0]); err != nil {
		fmt.Fprintf(a.stderr, "sqsworker %s: %v\n", cmd.path, err)
		return exitUsage
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	switch {
	case *region != "":
		o.queue.region = *region
	case o.queue.region == "":
		// A bare name: the region the SDK would use, as the global help
		// says (nothing here calls AWS, so only the environment counts).
		o.queue.region = cmp.Or(os.Getenv("AWS_REGION"), os.Getenv("AWS_DEFAULT_REGION"))
	}
	if o.kind == "keda" {
		if err := checkKubernetesNames(&o); err != nil {
			fmt.Fprintf(a.stderr, "sqsworker %s --scaling keda: %v\n", cmd.path, err)
			return exitUsage
		}
	}
	if o.kind == "ecs" && !set["min"] {
		o.minCount = 1
	}
	m, err := a.measure(ctx, &o, set)
	if err != nil {
		fmt.Fprintf(a.stderr, "sqsworker %s --scaling %s: %v\n", cmd.path, o.kind, err)
		if errors.Is(err, errMeasure) {
			return exitUsage
		}
		return exitProblems
	}
	if w := implausible(m); w != "" {
		fmt.Fprintf(a.stderr, "sqsworker %s --scaling %s: warning: %s\n", cmd.path, o.kind, w)
	}
	var doc *yaml.Node
	switch o.kind {
	case "keda":
		doc, err = kedaTemplate(o, m)
	case "ecs":
		doc, err = ecsTemplate(o, m)
	case "lambda":
		doc, err = lambdaTemplate(o, m)
	default:
		err = fmt.Errorf("--scaling %q: use keda, ecs or lambda", o.kind)
	}
	if err != nil {
		fmt.Fprintf(a.stderr, "sqsworker %s --scaling %s: %v\n", cmd.path, o.kind, err)
		return exitUsage
	}
	return a.writeDoc(cmd, doc, *out)
}

// writeDoc prints a document as YAML (comments kept) or JSON.
func (a *app) writeDoc(cmd *command, doc *yaml.Node, out string) int {
	if out == "json" {
		var v any
		if err := doc.Decode(&v); err != nil {
			return a.fail(cmd, err)
		}
		a.writeJSON(v)
		return exitOK
	}
	var b bytes.Buffer
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	if err := enc.Encode(doc); err != nil {
		return a.fail(cmd, err)
	}
	a.stdout.Write(b.Bytes())
	return exitOK
}

// errMeasure marks a measurement given wrongly (a usage error).
var errMeasure = errors.New("measurement")

type usageError struct{ msg string }

func (e usageError) Error() string        { return e.msg }
func (e usageError) Is(target error) bool { return target == errMeasure }

func usagef(format string, args ...any) error { return usageError{fmt.Sprintf(format, args...)} }

// measure resolves the measurement flags into a capacity.
func (a *app) measure(ctx context.Context, o *scalingOptions, set map[string]bool) (measured, error) {
	n := 0
	for _, f := range []string{"stats", "capacity", "handler-time"} {
		if set[f] {
			n++
		}
	}
	if n != 1 {
		return measured{}, usagef("give one measurement: --stats (a worker's StatsHandler URL or a Stats file), --handler-time (with --concurrency), or --capacity")
	}
	if set["concurrency"] && !set["handler-time"] && o.kind != "lambda" {
		return measured{}, usagef("--concurrency goes with --handler-time (--stats carries the worker's own)")
	}
	switch {
	case set["stats"]:
		s, err := a.readStats(ctx, o.stats)
		if err != nil {
			return measured{}, err
		}
		if s.HandlerRuns == 0 || s.MeanHandlerTime <= 0 || s.Concurrency <= 0 {
			return measured{}, usagef("the stats at %s have no handler runs yet (HandlerRuns %d, Concurrency %d): measure a worker under load, one built with this version, or give --handler-time and --concurrency", o.stats, s.HandlerRuns, s.Concurrency)
		}
		m := measured{capacity: s.Capacity, handlerTime: s.MeanHandlerTime, concurrency: s.Concurrency,
			source:     fmt.Sprintf("measured by a worker (%s): Concurrency %d / MeanHandlerTime %v over %d handler runs", o.stats, s.Concurrency, s.MeanHandlerTime, s.HandlerRuns),
			timeSource: fmt.Sprintf("MeanHandlerTime over %d handler runs at %s", s.HandlerRuns, o.stats)}
		if o.kind == "lambda" {
			// The worker's slots say nothing of the function's.
			m.concurrency = max(o.concurrency, 1)
		}
		return m, nil
	case set["capacity"]:
		if o.capacity <= 0 || math.IsInf(o.capacity, 0) || math.IsNaN(o.capacity) {
			return measured{}, usagef("--capacity %v: give the messages per second one worker takes, a positive number", o.capacity)
		}
		if o.kind == "lambda" {
			return measured{}, usagef("lambda needs the time per message (--handler-time or --stats), not --capacity: a function's time per batch sets its timeout and concurrency")
		}
		return measured{capacity: o.capacity, source: fmt.Sprintf("--capacity %s messages/s per worker", fmtFloat(o.capacity))}, nil
	}
	if o.handlerTime <= 0 {
		return measured{}, usagef("--handler-time %v: give the mean time a message holds a handler slot, e.g. 250ms", o.handlerTime)
	}
	c := o.concurrency
	if c == 0 {
		c = 10 // worker.Options.Concurrency's default
		if o.kind == "lambda" {
			c = 1 // sqslambda.Options.Concurrency's default
		}
	}
	if c < 0 {
		return measured{}, usagef("--concurrency %d: give a positive number", c)
	}
	return measured{capacity: float64(c) / o.handlerTime.Seconds(), handlerTime: o.handlerTime, concurrency: c,
		source: fmt.Sprintf("--concurrency %d / --handler-time %v", c, o.handlerTime), timeSource: "--handler-time"}, nil
}

// plausibleCapacity is the most messages per second one worker plausibly
// takes: each receive brings at most 10 messages and takes milliseconds,
// with a few receives in flight (Options.Pollers), and each is deleted in
// batches of 10 alike.
const plausibleCapacity = 10_000

// implausible returns a warning when the measured capacity is more than a
// worker plausibly takes (a fast handler measured by a worker whose
// Stats.Capacity was not yet bounded by its receive and delete paths, or a
// mistyped --capacity): the template's backlog target would then be one
// no backlog reaches, and the fleet would never scale out.
func implausible(m measured) string {
	if m.capacity <= plausibleCapacity {
		return ""
	}
	return fmt.Sprintf("the capacity, %s messages/s per worker (%s), is more than one worker plausibly takes (each receive brings at most 10 messages, a few receives at a time; about %s/s at most): "+
		"the backlog target below would be one no backlog reaches, and the fleet would not scale out. Measure a worker under load with this version (its Capacity is bounded by what its receive and delete paths measured), or give --capacity or --handler-time",
		fmtFloat(m.capacity), m.source, fmtFloat(plausibleCapacity))
}

// backlogTarget is the backlog one worker clears within the target
// latency: the number KEDA's queueLength and ECS's target value are.
func backlogTarget(o scalingOptions, m measured) (int, string, error) {
	if o.latency <= 0 {
		return 0, "", errors.New("--target-latency is required: the longest a message should wait in the queue, e.g. 30s")
	}
	if m.handlerTime > 0 && o.latency < m.handlerTime {
		return 0, "", fmt.Errorf("--target-latency %v is below the mean handler time %v: a message takes at least that long once received, so no number of workers meets the target; raise --target-latency or make the handler faster", o.latency, m.handlerTime)
	}
	v := math.Floor(m.capacity * o.latency.Seconds())
	if v < 1 {
		return 0, "", fmt.Errorf("one worker clears %s messages within --target-latency %v (capacity %s/s): not one whole message; raise --target-latency or the worker's capacity", fmtFloat(m.capacity*o.latency.Seconds()), o.latency, fmtFloat(m.capacity))
	}
	why := fmt.Sprintf("%d = floor(capacity %s messages/s x target latency %v): the backlog one worker clears within the target.\nCapacity: %s.", int(v), fmtFloat(m.capacity), o.latency, m.source)
	return int(v), why, nil
}

// drainBudget is the time a worker needs to stop: ShutdownTimeout +
// FlushTimeout, and the stop budget to give it (plus slack for the
// signal, the runtime and the exit).
func drainBudget(o scalingOptions) (need, give time.Duration) {
	sd, fl := o.shutdown, o.flush
	if sd == 0 {
		sd = 30 * time.Second
	}
	if fl == 0 {
		fl = 5 * time.Second
	}
	need = sd + fl
	return need, (need + drainSlack).Round(time.Second)
}

func kedaTemplate(o scalingOptions, m measured) (*yaml.Node, error) {
	qlen, why, err := backlogTarget(o, m)
	if err != nil {
		return nil, err
	}
	region := o.queue.region
	if region == "" {
		return nil, errors.New("KEDA needs the queue's region: give the queue's URL or ARN, --region, or set AWS_REGION")
	}
	minR := o.minCount
	if minR < 0 || o.maxCount < max(minR, 1) || o.activation < 0 {
		return nil, fmt.Errorf("--min %d, --max %d, --activation %d: want 0 <= min <= max, max >= 1, activation >= 0", minR, o.maxCount, o.activation)
	}
	name := o.name
	if name == "" {
		if name = dnsName(o.queue.name); name == "" {
			return nil, fmt.Errorf("queue name %q gives no Kubernetes name: give --name", o.queue.name)
		}
	}
	need, give := drainBudget(o)
	meta := []any{
		"# The queue; KEDA takes its URL (or its bare name when that is unambiguous).",
		"queueURL", o.queue.urlOrName(),
		"awsRegion", region,
		"# " + why,
		"queueLength", fmt.Sprint(qlen),
		"# Messages that wake a fleet scaled to zero (0: the first one).",
		"activationQueueLength", fmt.Sprint(o.activation),
		"# Count in-flight messages (ApproximateNumberOfMessagesNotVisible) as backlog: the jobs\n" +
			"# running, and the failed ones hidden until their retry (the worker sets a failed\n" +
			"# message's visibility to its retry delay). During a downstream outage that is every\n" +
			"# failing job, so true would scale to maxReplicaCount with pods idle until the retries\n" +
			"# are due. false counts the visible messages only: the work no worker has taken. A\n" +
			"# worker scaled in finishes its running jobs within the stop budget and releases the\n" +
			"# rest (--count-in-flight for true; keda#1663).",
		"scaleOnInFlight", fmt.Sprint(o.countInFlight),
		"# Count delayed messages (ApproximateNumberOfMessagesDelayed, keda#4900) as backlog:\n" +
			"# true keeps workers up for messages not yet due; false lets the fleet scale to zero\n" +
			"# and wakes it when they become visible (--count-delayed).",
		"scaleOnDelayed", fmt.Sprint(o.countDelayed),
	}
	trigger := []any{"type", "aws-sqs-queue"}
	if o.triggerAuth != "" {
		trigger = append(trigger, "# The TriggerAuthentication that gives KEDA the AWS identity to read the queue's attributes.",
			"authenticationRef", mapping("name", o.triggerAuth))
	}
	trigger = append(trigger, "metadata", mapping(meta...))
	metadata := []any{"name", name}
	if o.namespace != "" {
		metadata = append(metadata, "namespace", o.namespace)
	}
	spec := mapping(
		"# The Deployment running the workers.",
		"scaleTargetRef", mapping("name", name),
		"# KEDA's defaults: the queue is read every 30 s; scale to zero waits 300 s without backlog.",
		"pollingInterval", 30,
		"cooldownPeriod", 300,
		minComment(minR),
		"minReplicaCount", minR,
		"maxReplicaCount", o.maxCount,
		"triggers", seq(mapping(trigger...)),
	)
	doc := mapping(
		"apiVersion", "keda.sh/v1alpha1",
		"kind", "ScaledObject",
		"metadata", mapping(metadata...),
		"spec", spec,
	)
	doc.HeadComment = strings.Join([]string{
		"Generated by `sqsworker template --scaling keda`. Apply: kubectl apply -f FILE",
		fmt.Sprintf("Workers scale so that each faces at most %d messages: with %s messages/s each, a message", qlen, fmtFloat(m.capacity)),
		fmt.Sprintf("waits about %v at most while the fleet keeps up (and the replicas are not at maxReplicaCount).", o.latency),
		fmt.Sprintf("Drain: the worker returns within ShutdownTimeout + FlushTimeout = %v of SIGTERM; set the pod's", need),
		fmt.Sprintf("terminationGracePeriodSeconds to at least %d (Kubernetes' default is %d).", int(give.Seconds()), int(k8sDefaultGrace.Seconds())),
	}, "\n")
	return &yaml.Node{Kind: yaml.DocumentNode, Content: []*yaml.Node{doc}}, nil
}

// minComment explains KEDA's minReplicaCount.
func minComment(n int) string {
	if n == 0 {
		return "# 0: scale to zero when the queue is empty; activationQueueLength wakes the fleet again."
	}
	return fmt.Sprintf("# --min %d: at least %d workers, even with the queue empty.", n, n)
}

func ecsTemplate(o scalingOptions, m measured) (*yaml.Node, error) {
	target, why, err := backlogTarget(o, m)
	if err != nil {
		return nil, err
	}
	if o.cluster == "" || o.service == "" {
		return nil, errors.New("ECS needs --cluster and --service: the service whose DesiredCount scales")
	}
	minT := o.minCount
	if minT <= 0 {
		return nil, fmt.Errorf("--min %d: backlog per task divides by RunningTaskCount, which has no value with no task running, so the policy could never scale out from zero; keep at least 1 task (or scale from zero with a step scaling policy on the queue's depth)", minT)
	}
	if o.maxCount < minT {
		return nil, fmt.Errorf("--min %d is above --max %d", minT, o.maxCount)
	}
	need, give := drainBudget(o)
	if need > fargateMaxStopTimeout {
		return nil, fmt.Errorf("the worker needs ShutdownTimeout + FlushTimeout = %v to stop, more than the %v ECS gives a Fargate container after SIGTERM (stopTimeout's maximum): lower --shutdown-timeout / --flush-timeout (and the worker's Options) so their sum stays under %v", need, fargateMaxStopTimeout, fargateMaxStopTimeout-drainSlack)
	}
	stop := min(give, fargateMaxStopTimeout)
	resourceID := "service/" + o.cluster + "/" + o.service
	metrics := seq(
		mapping("Id", "m1", "Label", "Messages waiting in the queue",
			"MetricStat", mapping("Metric", mapping("Namespace", "AWS/SQS", "MetricName", "ApproximateNumberOfMessagesVisible",
				"Dimensions", seq(mapping("Name", "QueueName", "Value", o.queue.name))), "Stat", "Sum"),
			"ReturnData", false),
		mapping("Id", "m2", "Label", "Running tasks of the service",
			"MetricStat", mapping("Metric", mapping("Namespace", "ECS/ContainerInsights", "MetricName", "RunningTaskCount",
				"Dimensions", seq(mapping("Name", "ClusterName", "Value", o.cluster), mapping("Name", "ServiceName", "Value", o.service))), "Stat", "Average"),
			"ReturnData", false),
		mapping("Id", "e1", "Label", "Backlog per task", "Expression", "m1 / m2", "ReturnData", true),
	)
	resources := mapping(
		"# The service's task count, between --min and --max.",
		"ScalableTarget", mapping("Type", "AWS::ApplicationAutoScaling::ScalableTarget", "Properties", mapping(
			"ServiceNamespace", "ecs", "ScalableDimension", "ecs:service:DesiredCount",
			"ResourceId", resourceID, "MinCapacity", minT, "MaxCapacity", o.maxCount)),
		"# Target tracking on backlog per task: ApproximateNumberOfMessagesVisible / RunningTaskCount\n"+
			"# (RunningTaskCount comes from Container Insights: turn it on for the cluster).",
		"BacklogPerTaskPolicy", mapping("Type", "AWS::ApplicationAutoScaling::ScalingPolicy", "Properties", mapping(
			"PolicyName", o.service+"-backlog-per-task",
			"PolicyType", "TargetTrackingScaling",
			"ScalingTargetId", ref("ScalableTarget"),
			"TargetTrackingScalingPolicyConfiguration", mapping(
				"# "+why,
				"TargetValue", target,
				"# Scale out a minute apart; scale in slowly, as each task drains its handlers first.",
				"ScaleOutCooldown", int(o.outCooldown.Seconds()),
				"ScaleInCooldown", int(o.inCooldown.Seconds()),
				"CustomizedMetricSpecification", mapping("Metrics", metrics)))),
	)
	doc := mapping(
		"AWSTemplateFormatVersion", "2010-09-09",
		"Description", fmt.Sprintf("sqsworker: ECS service %s scales on the backlog per task of queue %s (target %d)", o.service, o.queue.name, target),
		"Resources", resources,
	)
	doc.HeadComment = strings.Join([]string{
		"Generated by `sqsworker template --scaling ecs`. Deploy: aws cloudformation deploy --template-file FILE --stack-name NAME",
		fmt.Sprintf("Each task takes %s messages/s; at %d messages per task a message waits about %v at most.", fmtFloat(m.capacity), target, o.latency),
		fmt.Sprintf("Drain: the worker returns within ShutdownTimeout + FlushTimeout = %v of SIGTERM; set the container's", need),
		fmt.Sprintf("stopTimeout to %d in the task definition (Fargate allows at most %d; the default is 30).", int(stop.Seconds()), int(fargateMaxStopTimeout.Seconds())),
	}, "\n")
	return &yaml.Node{Kind: yaml.DocumentNode, Content: []*yaml.Node{doc}}, nil
}

func lambdaTemplate(o scalingOptions, m measured) (*yaml.Node, error) {
	if o.function == "" {
		return nil, errors.New("lambda needs --function: the function the mapping invokes")
	}
	b := o.batchSize
	switch {
	case b < 1:
		return nil, fmt.Errorf("--batch-size %d: give 1 or more", b)
	case o.queue.fifo && b > lambdaMaxBatchNoWindow:
		return nil, fmt.Errorf("--batch-size %d: a FIFO queue's event source mapping takes at most %d messages a batch", b, lambdaMaxBatchNoWindow)
	case o.queue.fifo && o.window > 0:
		return nil, fmt.Errorf("--batch-window %v: a FIFO queue's event source mapping has no batching window", o.window)
	case b > lambdaMaxBatch:
		return nil, fmt.Errorf("--batch-size %d: a standard queue's event source mapping takes at most %d messages a batch", b, lambdaMaxBatch)
	case b > lambdaMaxBatchNoWindow && o.window < time.Second:
		return nil, fmt.Errorf("--batch-size %d: a batch over %d messages needs a batching window of at least 1s (--batch-window)", b, lambdaMaxBatchNoWindow)
	case o.window < 0 || o.window > lambdaMaxWindow || o.window%time.Second != 0:
		return nil, fmt.Errorf("--batch-window %v: give whole seconds from 0 to %v", o.window, lambdaMaxWindow)
	}
	if o.latency > 0 && m.handlerTime > 0 && o.latency < m.handlerTime {
		return nil, fmt.Errorf("--target-latency %v is below the mean handler time %v: a message takes at least that long once received; raise --target-latency or make the handler faster", o.latency, m.handlerTime)
	}
	if o.latency > 0 && o.window >= o.latency {
		return nil, fmt.Errorf("--batch-window %v is not below --target-latency %v: the window alone can hold a message that long; shorten it", o.window, o.latency)
	}
	// A batch's time: its records, Concurrency at a time.
	c := m.concurrency
	batchTime := time.Duration(math.Ceil(float64(b)/float64(c))) * m.handlerTime
	timeout := o.functionTimeout
	timeoutWhy := fmt.Sprintf("--function-timeout %v", timeout)
	if timeout == 0 {
		timeout = max(3*time.Second, (2*batchTime).Truncate(time.Second)+time.Second)
		timeoutWhy = fmt.Sprintf("twice a batch's time (%v), in whole seconds, at least 3 s", batchTime)
	}
	switch {
	case timeout < batchTime:
		return nil, fmt.Errorf("--function-timeout %v is shorter than a batch's measured time %v (ceil(batch %d / concurrency %d) x handler time %v): the function would time out on a typical batch; raise it, or lower --batch-size", timeout, batchTime, b, c, m.handlerTime)
	case timeout > lambdaMaxTimeout:
		return nil, fmt.Errorf("a batch needs a function timeout of %v, over Lambda's %v: lower --batch-size or raise sqslambda's Concurrency", timeout, lambdaMaxTimeout)
	case timeout > o.visibility:
		return nil, fmt.Errorf("the function timeout %v exceeds the queue's visibility timeout %v: Lambda refuses such a mapping (a message would come back while its batch still runs); raise the queue's VisibilityTimeout to at least %v (AWS advises %d x the function timeout + the batch window)", timeout, o.visibility, lambdaVisibilityPerTime*timeout+o.window, lambdaVisibilityPerTime)
	}
	// The concurrency: batches at once to take the peak rate.
	need, needWhy := 0, ""
	switch {
	case o.maxConcurrency > 0:
		need, needWhy = o.maxConcurrency, fmt.Sprintf("--max-concurrency %d", o.maxConcurrency)
	case o.rate > 0:
		need = max(lambdaMinConcurrency, int(math.Ceil(o.rate*batchTime.Seconds()/float64(b))))
		needWhy = fmt.Sprintf("ceil(peak rate %s/s x batch time %v / batch size %d), at least %d", fmtFloat(o.rate), batchTime, b, lambdaMinConcurrency)
	default:
		return nil, errors.New("give --rate (the peak messages per second) or --max-concurrency: the mapping's concurrency is sized from it")
	}
	scaleNote := ""
	props := []any{
		"FunctionName", o.function,
		"EventSourceArn", o.queue.arnNode(),
		"# Partial batch responses: sqslambda reports each failed record, so the batch's\n# successes are not run again.",
		"FunctionResponseTypes", seq(str("ReportBatchItemFailures")),
		"# " + fmt.Sprintf("--batch-size %d: one batch takes ceil(%d / sqslambda Concurrency %d) x handler time %v (%s) = %v.", b, b, c, m.handlerTime, m.timeSource, batchTime),
		"BatchSize", b,
	}
	if !o.queue.fifo {
		props = append(props, "# --batch-window: how long Lambda gathers a batch before invoking.", "MaximumBatchingWindowInSeconds", int(o.window.Seconds()))
	}
	if o.provisioned {
		minP, maxP := o.minPollers, o.maxPollers
		maxWhy := fmt.Sprintf("--max-pollers %d", maxP)
		if maxP == 0 {
			maxP = max(minP, (need+lambdaInvokesPerPoller-1)/lambdaInvokesPerPoller)
			maxWhy = fmt.Sprintf("ceil(%d concurrent batches (%s) / %d invokes per poller)", need, needWhy, lambdaInvokesPerPoller)
		}
		if minP < lambdaMinPollers || minP > lambdaMaxMinPollers || maxP < lambdaMinPollers || maxP > lambdaMaxPollers || minP > maxP {
			return nil, fmt.Errorf("pollers %d to %d: SQS mappings take MinimumPollers %d to %d and MaximumPollers %d to %d, minimum <= maximum", minP, maxP, lambdaMinPollers, lambdaMaxMinPollers, lambdaMinPollers, lambdaMaxPollers)
		}
		props = append(props,
			fmt.Sprintf("# Provisioned mode: pollers kept ready (up to %d concurrent invokes each; the mapping adds up\n# to %d concurrent batches a minute). MaximumPollers = %s.", lambdaInvokesPerPoller, lambdaScaleUpProvision, maxWhy),
			"ProvisionedPollerConfig", mapping("MinimumPollers", minP, "MaximumPollers", maxP))
	} else {
		if need < lambdaMinConcurrency || need > lambdaMaxConcurrency {
			return nil, fmt.Errorf("MaximumConcurrency %d (%s): SQS mappings take %d to %d; use larger batches, or --provisioned (up to %d pollers of %d invokes)", need, needWhy, lambdaMinConcurrency, lambdaMaxConcurrency, lambdaMaxPollers, lambdaInvokesPerPoller)
		}
		if mins := float64(need) / lambdaScaleUpStandard; mins > 1 {
			scaleNote = fmt.Sprintf("\nStandard mode adds up to %d concurrent batches a minute: reaching %d takes about %.0f minutes; --provisioned scales faster.", lambdaScaleUpStandard, need, math.Ceil(mins))
		}
		props = append(props,
			fmt.Sprintf("# MaximumConcurrency = %s:\n# the most batches at once; keep the function's reserved concurrency at or above it,\n# or Lambda throttles the mapping's invokes.", needWhy),
			"ScalingConfig", mapping("MaximumConcurrency", need))
	}
	advised := lambdaVisibilityPerTime*timeout + o.window
	visNote := fmt.Sprintf("The queue's VisibilityTimeout %v is at least %d x the timeout + the window (%v), as AWS advises.", o.visibility, lambdaVisibilityPerTime, advised)
	if o.visibility < advised {
		visNote = fmt.Sprintf("The queue's VisibilityTimeout %v is below the %v AWS advises (%d x the timeout + the window): a throttled batch may\ncome back before Lambda retries it; raise it.", o.visibility, advised, lambdaVisibilityPerTime)
	}
	resources := mapping(
		"# The mapping that polls the queue and invokes the function with batches.",
		"EventSourceMapping", mapping("Type", "AWS::Lambda::EventSourceMapping", "Properties", mapping(props...)))
	doc := mapping(
		"AWSTemplateFormatVersion", "2010-09-09",
		"Description", fmt.Sprintf("sqsworker: Lambda function %s consumes queue %s in batches of %d", o.function, o.queue.name, b),
		"Resources", resources,
	)
	doc.HeadComment = "Generated by `sqsworker template --scaling lambda`. Deploy: aws cloudformation deploy --template-file FILE --stack-name NAME\n" +
		fmt.Sprintf("Set the function's Timeout to %d s (%s).\n", int(timeout.Seconds()), timeoutWhy) + visNote + scaleNote
	return &yaml.Node{Kind: yaml.DocumentNode, Content: []*yaml.Node{doc}}, nil
}

// queueRef is a queue as the templates name it: from a name, a URL or an
// ARN, with what each carries.
type queueRef struct {
	name, url, region, account, partition string
	fifo                                  bool
}

// parseQueueRef reads a queue's name, URL or ARN, checked by queueref.
func parseQueueRef(s string) (queueRef, error) {
	var q queueRef
	if err := queueref.Check(s); err != nil {
		return q, err
	}
	q.name, q.fifo = queueref.Name(s), queueref.FIFO(s)
	switch {
	case strings.HasPrefix(s, "arn:"):
		a, err := queueref.ParseARN(s)
		if err != nil {
			return q, err
		}
		q.partition, q.region, q.account = a.Partition, a.Region, a.Account
	case strings.HasPrefix(s, "https://") || strings.HasPrefix(s, "http://"):
		q.url = s
		if u, err := url.Parse(s); err == nil {
			if segs := strings.Split(strings.Trim(u.Path, "/"), "/"); len(segs) == 2 {
				q.account = segs[0]
			}
			if host := strings.Split(u.Host, "."); len(host) >= 3 && host[0] == "sqs" {
				q.region = host[1]
			}
		}
	}
	return q, nil
}

// urlOrName is the queue's URL when known (from a URL, or an ARN in the aws
// partition), else its name.
func (q queueRef) urlOrName() string {
	switch {
	case q.url != "":
		return q.url
	case q.partition == "aws" && q.account != "":
		return "https://sqs." + q.region + ".amazonaws.com/" + q.account + "/" + q.name
	}
	return q.name
}

// arnNode is the queue's ARN: as given, or built by CloudFormation from the
// stack's partition, region and account.
func (q queueRef) arnNode() *yaml.Node {
	if q.partition != "" {
		return str("arn:" + q.partition + ":sqs:" + q.region + ":" + q.account + ":" + q.name)
	}
	return mapping("Fn::Sub", "arn:${AWS::Partition}:sqs:${AWS::Region}:${AWS::AccountId}:"+q.name)
}

// dnsName turns a queue name into a Kubernetes object name: a DNS-1123
// label (see checkDNSLabel), cut to its 63 characters.
func dnsName(s string) string {
	s = strings.ToLower(strings.TrimSuffix(s, ".fifo"))
	s = strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' {
			return r
		}
		return '-'
	}, s)
	s = strings.Trim(s, "-")
	if len(s) > dnsLabelMax {
		s = strings.TrimRight(s[:dnsLabelMax], "-")
	}
	return s
}

// dnsLabelMax is the length limit of a DNS-1123 label.
const dnsLabelMax = 63

// checkDNSLabel checks a Kubernetes name against the DNS-1123 label rule
// (RFC 1123), which Kubernetes applies to namespaces and, through the
// labels KEDA derives from it, to a ScaledObject's name: at most 63
// lowercase letters, digits and '-', starting and ending with a letter or
// a digit.
func checkDNSLabel(flagName, v string) error {
	bad := ""
	for _, r := range v {
		if r > 0x7f || !isAlnum(byte(r)) && r != '-' {
			bad = fmt.Sprintf("it has %q", r)
			break
		}
	}
	switch {
	case bad != "":
	case v == "":
		bad = "it is empty"
	case len(v) > dnsLabelMax:
		bad = fmt.Sprintf("it is %d characters long", len(v))
	case !isAlnum(v[0]) || !isAlnum(v[len(v)-1]):
		bad = "it must start and end with a lowercase letter or a digit"
	}
	if bad == "" {
		return nil
	}
	msg := fmt.Sprintf("--%s %q is not a valid Kubernetes name (%s): use at most %d lowercase letters, digits and '-', starting and ending with a letter or a digit", flagName, v, bad, dnsLabelMax)
	if s := dnsName(v); s != "" && s != v {
		msg += fmt.Sprintf(", e.g. %q", s)
	}
	return errors.New(msg)
}

func isAlnum(c byte) bool { return c >= 'a' && c <= 'z' || c >= '0' && c <= '9' }

// checkKubernetesNames checks the names KEDA's template gives Kubernetes:
// --name (the ScaledObject and its Deployment) and --namespace. Names
// derived from the queue are made valid by dnsName instead.
func checkKubernetesNames(o *scalingOptions) error {
	if o.name != "" {
		if err := checkDNSLabel("name", o.name); err != nil {
			return err
		}
	}
	if o.namespace != "" {
		return checkDNSLabel("namespace", o.namespace)
	}
	return nil
}

// fmtFloat writes a rate briefly.
func fmtFloat(v float64) string {
	if v == math.Trunc(v) && math.Abs(v) < 1e15 {
		return fmt.Sprintf("%.0f", v)
	}
	return strings.TrimRight(strings.TrimRight(fmt.Sprintf("%.2f", v), "0"), ".")
}

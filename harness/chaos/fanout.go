package chaos

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/sns"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/smithy-go"
	"golang.org/x/sync/errgroup"

	"github.com/sqsworker/sqsworker/dlq"
	"github.com/sqsworker/sqsworker/fanout"
	"github.com/sqsworker/sqsworker/harness/faultproxy"
	"github.com/sqsworker/sqsworker/harness/sqsdrain"
	"github.com/sqsworker/sqsworker/sqstest/snstest"
)

// FanoutSettings is the fan-out variant's part of a Config: the jobs are
// published to an SNS topic whose subscription delivers them, as SNS
// envelopes, to the run's queue, and the workers unwrap them
// (fanout.Unwrap). fanout.Setup builds the chain (topic, subscription with
// its dead-letter queue, queue policies) on an in-process snstest.Fake,
// since the emulator never fails a delivery, and the queues on the
// emulator. The Fake delivers through a second fault proxy whose
// DeliveryFaults apply to the deliveries' SendMessage calls: SNS retries a
// delivery that fails with a server error, throttling or a timeout
// DeliveryRetries times, and then puts the message in the subscription's
// dead-letter queue. Its sends to that dead-letter queue go to the
// emulator directly (a failure there is SNS's loss, which the run counts
// and fails on, but does not provoke).
type FanoutSettings struct {
	DeliveryFaults  faultproxy.Rule `json:"deliveryFaults"`
	DeliveryRetries int             `json:"deliveryRetries"`
	// DeliveryTimeout bounds each SQS call of a delivery (a hung call
	// fails as a timeout, which SNS retries).
	DeliveryTimeout time.Duration `json:"deliveryTimeout"`
	// Publishers is how many Publish calls run at once.
	Publishers int `json:"publishers"`
}

// fanoutVariant makes c the fan-out variant: the chaos variant's jobs,
// faults and kills behind an SNS subscription whose deliveries fail.
func fanoutVariant(c *Config) {
	c.Jobs = 5000
	c.Faults = chaosFaults()
	c.Kills = Kills{MinEvery: time.Second, MaxEvery: 4 * time.Second, KillShare: 0.5}
	c.Fanout = &FanoutSettings{
		DeliveryFaults:  faultproxy.Rule{Throttle: 0.15, ServerError: 0.12, Reset: 0.04, DropResponse: 0.05, Hang: 0.005},
		DeliveryRetries: 5, DeliveryTimeout: time.Second, Publishers: 32,
	}
}

// fanoutRun is the SNS side of a fan-out run.
type fanoutRun struct {
	settings  FanoutSettings
	topics    *snstest.Fake
	topicARN  string
	subDLQURL string
	proxy     *faultproxy.Proxy
	obs       *observer
	queues    *deliveries

	log     *bufio.Writer // the delivery proxy's log (Config.ProxyLog)
	logFile *os.File

	mu        sync.Mutex
	published bool
}

// startFanout builds the chain in front of the queue pair Run created
// (target): a delivery proxy, the SNS Fake delivering through it, and
// fanout.Setup's topic, subscription, subscription dead-letter queue and
// queue policies.
func startFanout(ctx context.Context, cfg Config, direct *sqs.Client, target dlq.SetupResult) (*fanoutRun, error) {
	s := *cfg.Fanout
	if s.DeliveryRetries <= 0 || s.DeliveryTimeout <= 0 || s.Publishers <= 0 {
		return nil, errors.New("chaos: FanoutSettings needs DeliveryRetries, DeliveryTimeout and Publishers; start from Variant(\"fanout\")")
	}
	fr := &fanoutRun{settings: s, obs: newObserver(0, 0)}
	popts := faultproxy.Options{Upstream: cfg.SQS, Rules: map[string]faultproxy.Rule{"SendMessage": s.DeliveryFaults},
		Seed: cfg.Seed ^ 0x736e73, OnRequest: fr.obs.observe}
	if cfg.ProxyLog {
		f, err := os.Create(filepath.Join(cfg.Dir, "sns-proxy.jsonl"))
		if err != nil {
			return nil, err
		}
		fr.log = bufio.NewWriterSize(f, 1<<20)
		fr.logFile = f
		popts.Log = fr.log
	}
	proxy, err := faultproxy.Start(popts)
	if err != nil {
		return nil, err
	}
	fr.proxy = proxy
	// The SDK's own retries off: SNS's are the Fake's.
	viaProxy := sqs.New(sqs.Options{BaseEndpoint: aws.String(proxy.URL), Region: cfg.Region, AppID: "sns",
		Credentials: credentials.NewStaticCredentialsProvider("test", "test", ""), Retryer: aws.NopRetryer{},
		HTTPClient: awshttp.NewBuildableClient().WithTransportOptions(func(t *http.Transport) {
			t.MaxIdleConnsPerHost = 2 * s.Publishers
		}),
	})
	fr.queues = &deliveries{viaProxy: viaProxy, direct: direct, timeout: s.DeliveryTimeout,
		digests: map[string]string{}, lookups: map[string]any{}, failed: map[string]int{}, ok: map[string]int{}, kinds: map[string]int{}}
	fr.topics, err = snstest.New(fr.queues, func(o *snstest.Options) { o.Region, o.DeliveryRetries = cfg.Region, s.DeliveryRetries })
	if err != nil {
		proxy.Close()
		return nil, err
	}
	name := target.QueueURL[strings.LastIndexByte(target.QueueURL, '/')+1:]
	res, err := fanout.Setup(ctx, fr.topics, direct, fanout.SetupOptions{Topic: name + "-topic", Queue: dlq.SetupOptions{Name: name}})
	if err != nil {
		proxy.Close()
		return nil, fmt.Errorf("chaos: fanout.Setup: %w", err)
	}
	fr.topicARN, fr.subDLQURL = res.TopicARN, res.FanoutDLQURL
	fr.queues.subDLQURL = res.FanoutDLQURL
	return fr, nil
}

// publish publishes every job to the topic.
func (fr *fanoutRun) publish(ctx context.Context, jobs []Job) error {
	var g errgroup.Group
	g.SetLimit(fr.settings.Publishers)
	for _, j := range jobs {
		g.Go(func() error {
			if _, err := fr.topics.Publish(ctx, &sns.PublishInput{TopicArn: aws.String(fr.topicARN), Message: aws.String(j.Body())}); err != nil {
				return fmt.Errorf("chaos: publishing job %s: %w", j.ID, err)
			}
			return nil
		})
	}
	err := g.Wait()
	fr.mu.Lock()
	fr.published = true
	fr.mu.Unlock()
	return err
}

// idle reports whether SNS has nothing left to deliver: everything
// published, no delivery waiting for a retry.
func (fr *fanoutRun) idle() bool {
	fr.mu.Lock()
	defer fr.mu.Unlock()
	return fr.published && fr.topics.Stats().Waiting == 0
}

// close stops the delivery proxy and writes its log.
func (fr *fanoutRun) close() error {
	fr.proxy.Close()
	if fr.log == nil {
		return nil
	}
	err := fr.log.Flush()
	if cerr := fr.logFile.Close(); err == nil {
		err = cerr
	}
	fr.log = nil
	return err
}

// collect reads the subscription's dead-letter queue and adds the SNS
// side's evidence to ev.
func (fr *fanoutRun) collect(ctx context.Context, direct *sqs.Client, ev *evidence) error {
	if err := fr.close(); err != nil {
		return err
	}
	subDead, err := sqsdrain.Drain(ctx, direct, fr.subDLQURL, time.Minute)
	if err != nil {
		return fmt.Errorf("chaos: reading the subscription's dead-letter queue: %w", err)
	}
	fe := &fanoutEvidence{SubDLQ: map[string]int{}, Redelivered: map[string]int{}, SNS: fr.topics.Stats()}
	for _, m := range subDead {
		j, err := parseMessageJob(aws.ToString(m.Body))
		if err != nil {
			fe.SubDLQUnknown++
			continue
		}
		fe.SubDLQ[j.ID]++
	}
	q := fr.queues
	q.mu.Lock()
	defer q.mu.Unlock()
	fe.Reached = map[string]int{}
	for digest, n := range fr.obs.reached {
		if job, ok := q.digests[digest]; ok {
			fe.Reached[job] += n
		}
	}
	for job, n := range fe.Reached {
		if n > 1 {
			fe.Redelivered[job] = n - 1
		}
	}
	fe.Envelopes = map[string][]string{}
	for digest, job := range q.digests {
		fe.Envelopes[job] = append(fe.Envelopes[job], digest)
	}
	fe.DeliveryFailed, fe.DeliveryOK, fe.FailureKinds = q.failed, q.ok, q.kinds
	fe.Requests = fr.proxy.Counts()
	ev.Fanout = fe
	return nil
}

// parseMessageJob decodes a message body as a job, unwrapping an SNS
// envelope (a fan-out run's queues and dead-letter queues hold envelopes).
func parseMessageJob(body string) (Job, error) {
	j, err := ParseJob(body)
	if err == nil || !fanout.IsEnvelope(body) {
		return j, err
	}
	e, eerr := fanout.ParseEnvelope(body)
	if eerr != nil {
		return Job{}, eerr
	}
	return ParseJob(e.Message)
}

// deliveries is the SQS client SNS delivers through: its sends to the
// queue go through the delivery proxy, each with a timeout; its sends to
// the subscription's dead-letter queue and its look-ups go to the
// emulator directly. It records each
// job's delivery sends: failed and succeeded, by job, and the failures'
// kinds.
type deliveries struct {
	viaProxy, direct *sqs.Client
	subDLQURL        string
	timeout          time.Duration

	mu      sync.Mutex
	digests map[string]string // faultproxy.BodyDigest of a delivered body → job
	failed  map[string]int    // job → delivery sends that failed
	ok      map[string]int    // job → delivery sends that succeeded
	kinds   map[string]int    // failed delivery sends by kind of error
	lookups map[string]any    // GetQueueUrl and GetQueueAttributes answers
}

var _ snstest.Queues = (*deliveries)(nil)

// GetQueueUrl asks the emulator directly, once per queue: the Fake looks
// the queue up for every delivery, which SNS does not, and the chain does
// not change during a run (the faults are on the deliveries' sends).
func (d *deliveries) GetQueueUrl(ctx context.Context, in *sqs.GetQueueUrlInput, optFns ...func(*sqs.Options)) (*sqs.GetQueueUrlOutput, error) {
	key := "url " + aws.ToString(in.QueueOwnerAWSAccountId) + "/" + aws.ToString(in.QueueName)
	return cached(d, key, func() (*sqs.GetQueueUrlOutput, error) { return d.direct.GetQueueUrl(ctx, in, optFns...) })
}

// GetQueueAttributes asks the emulator directly, once per queue and set of
// names (the queue's policy and key, which the Fake checks).
func (d *deliveries) GetQueueAttributes(ctx context.Context, in *sqs.GetQueueAttributesInput, optFns ...func(*sqs.Options)) (*sqs.GetQueueAttributesOutput, error) {
	key := fmt.Sprintf("attrs %s %v", aws.ToString(in.QueueUrl), in.AttributeNames)
	return cached(d, key, func() (*sqs.GetQueueAttributesOutput, error) { return d.direct.GetQueueAttributes(ctx, in, optFns...) })
}

// cached returns the answer to the call named key, calling it on the first
// need (and again after an error).
func cached[T any](d *deliveries, key string, call func() (*T, error)) (*T, error) {
	d.mu.Lock()
	v, ok := d.lookups[key]
	d.mu.Unlock()
	if ok {
		return v.(*T), nil
	}
	out, err := call()
	if err != nil {
		return nil, err
	}
	d.mu.Lock()
	d.lookups[key] = out
	d.mu.Unlock()
	return out, nil
}

// SendMessage delivers through the proxy, recording the outcome, or to the
// subscription's dead-letter queue directly.
func (d *deliveries) SendMessage(ctx context.Context, in *sqs.SendMessageInput, optFns ...func(*sqs.Options)) (*sqs.SendMessageOutput, error) {
	if aws.ToString(in.QueueUrl) == d.subDLQURL {
		return d.direct.SendMessage(ctx, in, optFns...)
	}
	body := aws.ToString(in.MessageBody)
	job := "?"
	if j, err := parseMessageJob(body); err == nil {
		job = j.ID
	}
	d.mu.Lock()
	d.digests[faultproxy.BodyDigest(body)] = job
	d.mu.Unlock()
	cctx, cancel := context.WithTimeout(ctx, d.timeout)
	defer cancel()
	out, err := d.viaProxy.SendMessage(cctx, in, optFns...)
	d.mu.Lock()
	defer d.mu.Unlock()
	if err == nil {
		d.ok[job]++
		return out, nil
	}
	d.failed[job]++
	d.kinds[errorKind(err)]++
	return out, err
}

// errorKind names a failed call's error for the report.
func errorKind(err error) string {
	var api smithy.APIError
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		return "timeout"
	case errors.As(err, &api):
		return api.ErrorCode()
	}
	return "network"
}

// fanoutEvidence is what the SNS side of a fan-out run collected.
type fanoutEvidence struct {
	// SubDLQ counts each job's copies in the subscription's dead-letter
	// queue; SubDLQUnknown its messages that are no job.
	SubDLQ        map[string]int `json:"subDLQ"`
	SubDLQUnknown int            `json:"subDLQUnknown"`
	// Reached counts, by job, the delivery sends that reached SQS (or may
	// have: answered 200, whether SNS read the answer or not, or the proxy
	// could not read the answer); Redelivered those beyond the first: SNS
	// got no answer to an earlier one and delivered the job again, so each
	// may have put one more copy in the queue.
	Reached     map[string]int `json:"reached"`
	Redelivered map[string]int `json:"redelivered"`
	// DeliveryFailed and DeliveryOK count each job's delivery sends that
	// failed and that succeeded; FailureKinds the failures by error.
	// Envelopes lists, by job, the faultproxy.BodyDigest of the envelopes
	// SNS delivered it in: the body of its dead-letter copies too.
	Envelopes      map[string][]string          `json:"envelopes"`
	DeliveryFailed map[string]int               `json:"deliveryFailed"`
	DeliveryOK     map[string]int               `json:"deliveryOk"`
	FailureKinds   map[string]int               `json:"failureKinds"`
	SNS            snstest.Stats                `json:"sns"`
	Requests       map[string]faultproxy.Counts `json:"requests"`
}

// FanoutFigures is the SNS side of a fan-out run.
type FanoutFigures struct {
	// SNS is the Fake's delivery counts: Lost counts messages SNS
	// discarded (a failed delivery it could not dead-letter).
	SNS snstest.Stats `json:"sns"`
	// SubscriptionDLQ counts the jobs in the subscription's dead-letter
	// queue, SubscriptionDLQCopies its messages.
	SubscriptionDLQ       int `json:"subscriptionDLQ"`
	SubscriptionDLQCopies int `json:"subscriptionDLQCopies"`
	// SubscriptionDLQUnexplained counts jobs there that SNS delivered
	// (a delivery send succeeded) or that never had a delivery fail, and
	// jobs both there and in the queue without a lost delivery answer.
	SubscriptionDLQUnexplained int `json:"subscriptionDLQUnexplained"`
	SubscriptionDLQUnknown     int `json:"subscriptionDLQUnknown"`
	// DeliveryFailures counts failed delivery sends, by error.
	DeliveryFailures map[string]int `json:"deliveryFailures"`
	// Redelivered counts delivery sends that reached SQS beyond each job's
	// first (SNS got no answer and delivered it again: each may have put an
	// extra copy in the queue).
	Redelivered int `json:"redelivered"`
	// DeliveryRequests is what the delivery proxy did, by action.
	DeliveryRequests map[string]faultproxy.Counts `json:"deliveryRequests"`
	Examples         []string                     `json:"examples,omitempty"`
}

// fanoutBudget is each job's redeliveries (delivery sends that reached SQS
// beyond the first) not yet used to explain an extra copy: by its
// successes first, then by its dead-letter copies.
type fanoutBudget map[string]int

// take uses up to n of job's redeliveries and returns how many it used.
func (b fanoutBudget) take(job string, n int) int {
	k := min(n, b[job])
	if k > 0 { // b is nil outside fan-out runs
		b[job] -= k
	}
	return k
}

// newFanoutFigures starts r.Fanout from the evidence.
func newFanoutFigures(fe *fanoutEvidence) *FanoutFigures {
	f := &FanoutFigures{SNS: fe.SNS, DeliveryFailures: fe.FailureKinds, SubscriptionDLQUnknown: fe.SubDLQUnknown, DeliveryRequests: fe.Requests}
	for _, n := range fe.SubDLQ {
		f.SubscriptionDLQCopies += n
	}
	for _, n := range fe.Redelivered {
		f.Redelivered += n
	}
	return f
}

// subscriptionDLQ checks a job found in the subscription's dead-letter
// queue: SNS must have failed to deliver it (no delivery send succeeded,
// at least one failed), once; and if it is also in the queue's world
// (done, dead-lettered or pending: inQueue), a delivery send of it must
// have reached SQS though SNS got no answer.
func (f *FanoutFigures) subscriptionDLQ(fe *fanoutEvidence, job string, inQueue bool) {
	f.SubscriptionDLQ++
	copies := fe.SubDLQ[job]
	why := ""
	switch {
	case fe.DeliveryOK[job] > 0:
		why = fmt.Sprintf("delivered (%d sends succeeded)", fe.DeliveryOK[job])
	case fe.DeliveryFailed[job] == 0:
		why = "no delivery of it failed"
	case copies > 1:
		why = fmt.Sprintf("%d copies", copies)
	case inQueue && fe.Reached[job] == 0:
		why = "also in the queue, though no delivery send reached SQS"
	}
	if why != "" {
		f.SubscriptionDLQUnexplained++
		if len(f.Examples) < 20 {
			f.Examples = append(f.Examples, fmt.Sprintf("%s: in the subscription DLQ but %s", job, why))
		}
	}
}

// text writes the fan-out lines of Text.
func (f *FanoutFigures) text(p func(string, ...any)) {
	s := f.SNS
	p("SNS: published %d, delivered %d, delivery retries %d, to the subscription DLQ %d, discarded %d, waiting %d",
		s.Published, s.Delivered, s.Retried, s.DeadLettered, s.Lost, s.Waiting)
	p("  delivery sends failed: %v; sends that reached SQS beyond a job's first (SNS delivered it again): %d", f.DeliveryFailures, f.Redelivered)
	p("  subscription DLQ: %d jobs (%d messages), %d unexplained, %d not jobs", f.SubscriptionDLQ, f.SubscriptionDLQCopies, f.SubscriptionDLQUnexplained, f.SubscriptionDLQUnknown)
	for _, e := range f.Examples {
		p("    %s", e)
	}
}

// failures lists the fan-out criteria the run broke.
func (f *FanoutFigures) failures() []string {
	var out []string
	if f.SNS.Lost > 0 {
		out = append(out, fmt.Sprintf("SNS discarded %d messages (a failed delivery it could not dead-letter)", f.SNS.Lost))
	}
	if f.SNS.Waiting > 0 {
		out = append(out, fmt.Sprintf("%d deliveries were still waiting for a retry at the end", f.SNS.Waiting))
	}
	if f.SubscriptionDLQUnexplained > 0 {
		out = append(out, fmt.Sprintf("%d jobs in the subscription DLQ without failed deliveries to explain them: %v", f.SubscriptionDLQUnexplained, f.Examples))
	}
	if f.SubscriptionDLQUnknown > 0 {
		out = append(out, fmt.Sprintf("%d subscription DLQ messages that are not jobs of this run", f.SubscriptionDLQUnknown))
	}
	return out
}

package testenv

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/sns"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"golang.org/x/sync/errgroup"

	"github.com/sqsworker/sqsworker/harness/sqsdrain"
)

// RequireEnv is the environment variable that turns a missing local AWS from
// a skip into a failure. `make test` sets it to 1.
const RequireEnv = "SQSWORKER_REQUIRE_INTEGRATION"

// BackendEnv names the SQS implementation behind the endpoint: "fauxqs"
// (set by localstack/start.sh), "localstack", or "aws". Conformance tests use
// it to pick the backend's declared quirks. Unset with a configured endpoint
// means "aws" for a non-loopback host and "localstack" otherwise.
const BackendEnv = "SQSWORKER_SQS_BACKEND"

// Endpoints is where the local AWS answers.
type Endpoints struct {
	SQS      string // SQS endpoint URL; empty when none is configured
	SNS      string // SNS endpoint URL; fauxqs serves SNS on its SQS port
	DynamoDB string // DynamoDB endpoint URL; empty when none is configured
	S3       string // S3 endpoint URL; empty when none is configured
	Region   string
	Backend  string // see BackendEnv
	Started  bool   // testenv started the emulators itself
}

var (
	once     sync.Once
	found    Endpoints
	findErr  error
	nameSeq  atomic.Uint64
	runStamp = time.Now().UnixNano() % 1_000_000_000
)

// Required reports whether integration tests must not be skipped.
func Required() bool { return os.Getenv(RequireEnv) == "1" }

// Find returns the local AWS endpoints, starting the emulators if no endpoint
// is configured. It does the work once per test binary.
func Find() (Endpoints, error) {
	once.Do(func() { found, findErr = find() })
	return found, findErr
}

func find() (Endpoints, error) {
	e := Endpoints{Region: firstNonEmpty(os.Getenv("AWS_REGION"), os.Getenv("AWS_DEFAULT_REGION"), "us-east-1")}
	base := os.Getenv("AWS_ENDPOINT_URL")
	e.SQS = firstNonEmpty(os.Getenv("AWS_ENDPOINT_URL_SQS"), base)
	e.DynamoDB = firstNonEmpty(os.Getenv("AWS_ENDPOINT_URL_DYNAMODB"), base)
	e.S3 = firstNonEmpty(os.Getenv("AWS_ENDPOINT_URL_S3"), base)
	if e.SQS != "" || e.DynamoDB != "" {
		e.Backend = os.Getenv(BackendEnv)
		if e.Backend == "" {
			e.Backend = "localstack"
			if !isLoopback(e.SQS) {
				e.Backend = "aws"
			}
		}
		e.SNS = firstNonEmpty(os.Getenv("AWS_ENDPOINT_URL_SNS"), base)
		if e.SNS == "" && e.Backend == "fauxqs" {
			e.SNS = e.SQS // fauxqs serves SNS and S3 on its SQS endpoint
		}
		if e.S3 == "" && e.Backend == "fauxqs" {
			e.S3 = e.SQS
		}
		return e, nil
	}
	root, err := repoRoot()
	if err != nil {
		return e, err
	}
	script := filepath.Join(root, "localstack", "start.sh")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", script)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return e, fmt.Errorf("no AWS endpoint is configured and %s failed: %v\n%s", script, err, strings.TrimSpace(stderr.String()))
	}
	vars := parseExports(stdout.String())
	e.SQS, e.SNS, e.DynamoDB, e.S3, e.Backend = vars["AWS_ENDPOINT_URL_SQS"], vars["AWS_ENDPOINT_URL_SNS"], vars["AWS_ENDPOINT_URL_DYNAMODB"], vars["AWS_ENDPOINT_URL_S3"], vars[BackendEnv]
	e.Started = true
	if e.SQS == "" || e.DynamoDB == "" {
		return e, fmt.Errorf("%s printed no endpoints:\n%s", script, stdout.String())
	}
	return e, nil
}

// parseExports reads `export K=V` lines as start.sh prints them.
func parseExports(s string) map[string]string {
	vars := map[string]string{}
	sc := bufio.NewScanner(strings.NewReader(s))
	for sc.Scan() {
		line, ok := strings.CutPrefix(strings.TrimSpace(sc.Text()), "export ")
		if !ok {
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		if ok && !strings.Contains(v, "${") {
			vars[k] = v
		}
	}
	return vars
}

func repoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		data, err := os.ReadFile(filepath.Join(dir, "go.mod"))
		if err == nil && bytes.Contains(data, []byte("module github.com/sqsworker/sqsworker\n")) {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("cannot find the sqsworker repository root (go.mod) above the working directory")
		}
		dir = parent
	}
}

func isLoopback(endpoint string) bool {
	u, err := url.Parse(endpoint)
	if err != nil {
		return false
	}
	host := u.Hostname()
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

func firstNonEmpty(ss ...string) string {
	for _, s := range ss {
		if s != "" {
			return s
		}
	}
	return ""
}

// unavailable skips t, or fails it when integration tests are required.
func unavailable(t testing.TB, format string, args ...any) {
	t.Helper()
	msg := fmt.Sprintf(format, args...)
	if Required() {
		t.Fatalf("local AWS required (%s=1) but unavailable: %s", RequireEnv, msg)
	}
	t.Skipf("SKIP (no local AWS): %s; run `make test` or set AWS_ENDPOINT_URL_SQS / AWS_ENDPOINT_URL_DYNAMODB", msg)
}

// Get returns the endpoints or skips/fails t when there are none.
func Get(t testing.TB) Endpoints {
	t.Helper()
	if testing.Short() && !Required() {
		t.Skip("SKIP (-short): integration test against the local AWS")
	}
	e, err := Find()
	if err != nil {
		unavailable(t, "%v", err)
	}
	return e
}

// AWSConfig returns an aws.Config for the endpoints: static test credentials
// for a loopback endpoint (unless AWS credentials are set), the default
// credential chain otherwise.
func AWSConfig(t testing.TB, endpoint string) aws.Config {
	t.Helper()
	e := Get(t)
	opts := []func(*config.LoadOptions) error{config.WithRegion(e.Region)}
	if isLoopback(endpoint) && os.Getenv("AWS_ACCESS_KEY_ID") == "" {
		opts = append(opts, config.WithCredentialsProvider(credentials.NewStaticCredentialsProvider("test", "test", "")))
	}
	cfg, err := config.LoadDefaultConfig(context.Background(), opts...)
	if err != nil {
		t.Fatalf("testenv: loading AWS config: %v", err)
	}
	return cfg
}

// ChildEnv returns the environment for a child process of a test (a
// re-executed test binary, an example's main): this process's
// environment, the local AWS's endpoints and region, the static test
// credentials AWSConfig uses when none are set (so the child reaches the
// loopback emulators as the test does), and extra ("NAME=value") last.
func ChildEnv(t testing.TB, extra ...string) []string {
	t.Helper()
	e := Get(t)
	env := append(os.Environ(), "AWS_REGION="+e.Region)
	for name, url := range map[string]string{"SQS": e.SQS, "SNS": e.SNS, "DYNAMODB": e.DynamoDB, "S3": e.S3} {
		if url != "" {
			env = append(env, "AWS_ENDPOINT_URL_"+name+"="+url)
		}
	}
	if os.Getenv("AWS_ACCESS_KEY_ID") == "" {
		env = append(env, "AWS_ACCESS_KEY_ID=test", "AWS_SECRET_ACCESS_KEY=test")
	}
	return append(env, extra...)
}

// SQS returns an SQS client for the local AWS.
func SQS(t testing.TB) *sqs.Client {
	t.Helper()
	e := Get(t)
	if e.SQS == "" {
		unavailable(t, "no SQS endpoint (set AWS_ENDPOINT_URL_SQS)")
	}
	return newSQS(t, e.SQS)
}

// newSQS returns an SQS client for endpoint, configured as SQS returns it.
func newSQS(t testing.TB, endpoint string) *sqs.Client {
	return sqs.NewFromConfig(AWSConfig(t, endpoint), func(o *sqs.Options) {
		o.BaseEndpoint, o.HTTPClient = aws.String(endpoint), sqsHTTPClient
	})
}

// sqsHTTPClient keeps as many idle connections as a worker keeps calls in
// flight, as docs/guides/scaling.md tells users to (the SDK's default keeps 10 per
// host, so a worker's receives, deletes and extensions would open and
// close connections).
var sqsHTTPClient = awshttp.NewBuildableClient().WithTransportOptions(func(t *http.Transport) {
	t.MaxIdleConnsPerHost = 100
})

// SNS returns an SNS client for the local AWS (fauxqs emulates SNS too).
func SNS(t testing.TB) *sns.Client {
	t.Helper()
	e := Get(t)
	if e.SNS == "" {
		unavailable(t, "no SNS endpoint (set AWS_ENDPOINT_URL_SNS)")
	}
	return sns.NewFromConfig(AWSConfig(t, e.SNS), func(o *sns.Options) { o.BaseEndpoint = aws.String(e.SNS) })
}

// SQSAt returns an SQS client for endpoint, a loopback address in front of
// the local SQS (a fault-injecting proxy), configured as SQS returns it.
func SQSAt(t testing.TB, endpoint string) *sqs.Client {
	t.Helper()
	if !isLoopback(endpoint) {
		t.Fatalf("testenv: %s is not a loopback address", endpoint)
	}
	return newSQS(t, endpoint)
}

// DynamoDB returns a DynamoDB client for the local AWS.
func DynamoDB(t testing.TB) *dynamodb.Client {
	t.Helper()
	e := Get(t)
	if e.DynamoDB == "" {
		unavailable(t, "no DynamoDB endpoint (set AWS_ENDPOINT_URL_DYNAMODB)")
	}
	return dynamodb.NewFromConfig(AWSConfig(t, e.DynamoDB), func(o *dynamodb.Options) { o.BaseEndpoint = aws.String(e.DynamoDB) })
}

// S3 returns an S3 client for the local AWS, with path-style addressing
// (bucket names in the path: a loopback endpoint has no per-bucket host
// names).
func S3(t testing.TB) *s3.Client {
	t.Helper()
	e := Get(t)
	if e.S3 == "" {
		unavailable(t, "no S3 endpoint (set AWS_ENDPOINT_URL_S3)")
	}
	return s3.NewFromConfig(AWSConfig(t, e.S3), func(o *s3.Options) {
		o.BaseEndpoint = aws.String(e.S3)
		o.UsePathStyle = true
		o.DisableLogOutputChecksumValidationSkipped = true // emulators return no checksums
	})
}

// UniqueName returns a resource name unique to this test run and call, so
// tests sharing one emulator never see each other's queues or tables. It
// keeps within SQS's 80-character queue-name limit.
func UniqueName(prefix string) string {
	name := fmt.Sprintf("%s-%d-%d", prefix, runStamp, nameSeq.Add(1))
	if len(name) > 75 {
		name = name[len(name)-75:]
	}
	return name
}

// Drain receives every message of a queue, deleting each, and returns them
// once each (by message ID), with their message attributes. It stops only
// when the queue counts no message, visible or not: a receive whose
// response the emulator lost under load hides its messages for that
// receive's visibility timeout (sqsdrain.Visibility for Drain's own), and
// Drain waits for them rather than miss them. It fails t after two minutes.
func Drain(t testing.TB, client DrainAPI, url string) []types.Message {
	t.Helper()
	msgs, err := sqsdrain.Drain(context.Background(), client, url, 2*time.Minute)
	if err != nil {
		t.Fatalf("testenv: draining %s: %v", url, err)
	}
	return msgs
}

// DrainAPI is what Drain calls.
type DrainAPI = sqsdrain.API

// BatchSender is the SQS call SendBodies makes.
type BatchSender interface {
	SendMessageBatch(ctx context.Context, params *sqs.SendMessageBatchInput, optFns ...func(*sqs.Options)) (*sqs.SendMessageBatchOutput, error)
}

// SendBodies sends the bodies "0" … "n-1" to url (Send); it fails tb on
// any error or failed entry.
func SendBodies(tb testing.TB, client BatchSender, url string, n int) {
	tb.Helper()
	if err := Send(context.Background(), client, url, n); err != nil {
		tb.Fatalf("testenv: %v", err)
	}
}

// Send sends the bodies "0" … "n-1" to url with SendMessageBatch, ten per
// call, 16 calls at a time, and returns the first error or failed entry.
// Benchmarks and load tools that have no testing.TB use it directly.
func Send(ctx context.Context, client BatchSender, url string, n int) error {
	var g errgroup.Group
	g.SetLimit(16)
	for start := 0; start < n; start += 10 {
		g.Go(func() error {
			in := &sqs.SendMessageBatchInput{QueueUrl: aws.String(url)}
			for i := start; i < min(start+10, n); i++ {
				in.Entries = append(in.Entries, types.SendMessageBatchRequestEntry{Id: aws.String(strconv.Itoa(i - start)), MessageBody: aws.String(strconv.Itoa(i))})
			}
			out, err := client.SendMessageBatch(ctx, in)
			if err == nil && len(out.Failed) > 0 {
				err = fmt.Errorf("%d entries failed: %s", len(out.Failed), aws.ToString(out.Failed[0].Message))
			}
			return err
		})
	}
	if err := g.Wait(); err != nil {
		return fmt.Errorf("sending %d messages to %s: %w", n, url, err)
	}
	return nil
}

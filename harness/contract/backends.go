package contract

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/aws/smithy-go"

	"github.com/sqsworker/sqsworker/harness/faultproxy"
	"github.com/sqsworker/sqsworker/harness/testenv"
	"github.com/sqsworker/sqsworker/sqstest"
)

// The errors the faults inject, as SQS returns them through the SDK.
func accessDenied() error {
	return &smithy.GenericAPIError{Code: "AccessDenied", Message: "contract: the role is not allowed to send to this queue", Fault: smithy.FaultClient}
}

func kmsAccessDenied() error {
	return &types.KmsAccessDenied{Message: aws.String("contract: the queue's KMS key refuses the caller"), ErrorCodeOverride: aws.String("KMS.AccessDeniedException")}
}

// Fake is the in-memory sqstest.Fake: every fault, every scenario in a
// testing/synctest bubble, so its delays and timeouts cost no real time.
func Fake() Backend {
	return Backend{
		Name:      "fake",
		Cannot:    func(Fault) string { return "" },
		Run:       func(t *testing.T, fn func(t *testing.T)) { synctest.Test(t, fn) },
		New:       newFakeEnv,
		Tolerance: 250 * time.Millisecond,
		MaxWait:   10 * time.Minute,
	}
}

func newFakeEnv(t *testing.T) *Env {
	f := sqstest.For(t)
	src, dlqURL := f.MustCreateQueueWithDLQ(t, "orders", maxReceiveCount,
		map[string]string{"VisibilityTimeout": strconv.Itoa(int(VisibilityTimeout / time.Second))})
	var gone atomic.Bool
	var removes []func()
	return &Env{Client: f, Observer: f, Source: src, DLQ: dlqURL, DLQGone: gone.Load,
		Heal: func() {
			t.Logf("requests to the fake (the suite's own included): %v", f.Requests())
			for _, remove := range removes {
				remove()
			}
		},
		Inject: func(t *testing.T, ft Fault) {
			in := sqstest.Fault{API: ft.API, Times: ft.Times}
			switch ft.Kind {
			case Throttle:
				in.Code = "RequestThrottled"
			case ServerError:
				in.Code = "InternalError"
			case AccessDenied:
				in.Err = accessDenied()
			case KMSAccessDenied:
				in.Err = kmsAccessDenied()
			case QueueDoesNotExist:
				in.Err = &types.QueueDoesNotExist{Message: aws.String("The specified queue does not exist.")}
			case EntryThrottle:
				in.Code, in.Entries = "RequestThrottled", true
			case EntryAccessDenied:
				in.Err, in.Entries = accessDenied(), true
			case EntryKMSAccessDenied:
				in.Err, in.Entries = kmsAccessDenied(), true
			case EntryOmitted:
				in.Entries, in.Omit = true, true
			case LostResponse:
				in.Code, in.AfterEffect = "InternalError", true
			case Hang:
				in.Hang = true
			case DLQDeleted:
				if _, err := f.DeleteQueue(context.Background(), &sqs.DeleteQueueInput{QueueUrl: aws.String(dlqURL)}); err != nil {
					t.Fatal(err)
				}
				gone.Store(true)
				return
			default:
				t.Fatalf("fake: no fault %v", ft.Kind)
			}
			removes = append(removes, f.InjectFault(in))
		}}
}

// proxyKinds are the faults the fault proxy injects, by the suite's kinds.
var proxyKinds = map[FaultKind]faultproxy.Kind{
	Throttle:     faultproxy.Throttle,
	ServerError:  faultproxy.ServerError,
	LostResponse: faultproxy.DropResponse,
	Hang:         faultproxy.Hang,
}

// Emulator is the local SQS emulator (fauxqs, or whatever
// AWS_ENDPOINT_URL_SQS names; see testenv), each scenario with its own
// faultproxy in front of it, as parallel subtests in real time. It skips t
// without an emulator, or fails it when integration tests are required
// (testenv's rule). The proxy fails whole calls only (throttling, HTTP
// 500, a dropped response, a hang), so scenarios with error codes or
// failed batch entries run on the fake alone.
func Emulator(t *testing.T) Backend {
	observer := testenv.SQS(t) // skips or fails t without an emulator, as testenv decides
	endpoint := testenv.Get(t).SQS
	return Backend{
		Name: "emulator",
		Cannot: func(f Fault) string {
			switch {
			case f.Kind == DLQDeleted:
				return ""
			case proxyKinds[f.Kind] == faultproxy.None:
				return "the fault proxy cannot answer with " + f.Kind.String()
			case f.Kind == Hang && f.API == "DeleteMessageBatch":
				return "RunLocal's own delete waits 30 s for a hung call, too long for make test"
			case f.Kind == Hang && f.API == "ReceiveMessage":
				return "the Lambda runtime's known gap (a receive without a call timeout) is watched for a minute, too long for make test"
			}
			return ""
		},
		Run:       func(t *testing.T, fn func(t *testing.T)) { fn(t) },
		Parallel:  true,
		New:       func(t *testing.T) *Env { return newEmulatorEnv(t, endpoint, observer) },
		Tolerance: 2 * time.Second,
		MaxWait:   time.Minute,
	}
}

func newEmulatorEnv(t *testing.T, endpoint string, observer *sqs.Client) *Env {
	ctx := context.Background()
	create := func(name string, attrs map[string]string) string {
		out, err := observer.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String(name), Attributes: attrs})
		if err != nil {
			t.Fatalf("CreateQueue %s: %v", name, err)
		}
		url := aws.ToString(out.QueueUrl)
		t.Cleanup(func() { observer.DeleteQueue(context.Background(), &sqs.DeleteQueueInput{QueueUrl: aws.String(url)}) })
		return url
	}
	dlqURL := create(testenv.UniqueName("contract-dlq"), nil)
	attrs, err := observer.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: aws.String(dlqURL),
		AttributeNames: []types.QueueAttributeName{types.QueueAttributeNameQueueArn}})
	if err != nil {
		t.Fatalf("reading the DLQ's ARN: %v", err)
	}
	src := create(testenv.UniqueName("contract"), map[string]string{
		"VisibilityTimeout": strconv.Itoa(int(VisibilityTimeout / time.Second)),
		"RedrivePolicy": fmt.Sprintf(`{"deadLetterTargetArn":%q,"maxReceiveCount":"%d"}`,
			attrs.Attributes[string(types.QueueAttributeNameQueueArn)], maxReceiveCount),
	})

	// rules are the active faults by action; a fault with Times is removed
	// once the proxy reports it applied that often.
	var mu sync.Mutex
	type rule struct {
		kind        faultproxy.Kind
		times, seen int
	}
	rules := map[string]*rule{}
	var proxy *faultproxy.Proxy
	apply := func() { // mu held
		out := map[string]faultproxy.Rule{}
		for api, r := range rules {
			out[api] = faultproxy.Rule{Every: 1, EveryKind: r.kind}
		}
		proxy.SetRules(out)
	}
	proxy, err = faultproxy.Start(faultproxy.Options{Upstream: endpoint, OnRequest: func(e faultproxy.Entry) {
		mu.Lock()
		defer mu.Unlock()
		r := rules[e.Action]
		if r == nil || e.Fault != r.kind || r.times == 0 {
			return
		}
		if r.seen++; r.seen >= r.times {
			delete(rules, e.Action)
			apply()
		}
	}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { proxy.Close() })
	var gone atomic.Bool
	return &Env{Client: testenv.SQSAt(t, proxy.URL), Observer: observer, Source: src, DLQ: dlqURL, DLQGone: gone.Load,
		Heal: func() {
			mu.Lock()
			defer mu.Unlock()
			clear(rules)
			apply()
		},
		Inject: func(t *testing.T, f Fault) {
			if f.Kind == DLQDeleted {
				if _, err := observer.DeleteQueue(ctx, &sqs.DeleteQueueInput{QueueUrl: aws.String(dlqURL)}); err != nil {
					t.Fatal(err)
				}
				gone.Store(true)
				return
			}
			mu.Lock()
			defer mu.Unlock()
			rules[f.API] = &rule{kind: proxyKinds[f.Kind], times: f.Times}
			apply()
		}}
}

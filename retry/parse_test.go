package retry_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/sqsworker/sqsworker/retry"
)

// The shapes SNS documents: the topic attribute (SetTopicAttributes and
// GetTopicAttributes' EffectiveDeliveryPolicy), the subscription attribute,
// and the bare retry object.
const (
	topicDoc = `{
  "http": {
    "defaultHealthyRetryPolicy": {
      "minDelayTarget": 5, "maxDelayTarget": 260, "numRetries": 10,
      "numMaxDelayRetries": 0, "numNoDelayRetries": 0, "numMinDelayRetries": 0,
      "backoffFunction": "geometric"
    },
    "disableSubscriptionOverrides": false,
    "defaultSicklyRetryPolicy": null,
    "defaultThrottlePolicy": { "maxReceivesPerSecond": 3 },
    "defaultRequestPolicy": { "headerContentType": "text/plain; charset=UTF-8" }
  }
}`
	subscriptionDoc = `{
  "healthyRetryPolicy": {
    "minDelayTarget": 5, "maxDelayTarget": 260, "numRetries": 10,
    "numMaxDelayRetries": 0, "backoffFunction": "GEOMETRIC"
  },
  "throttlePolicy": { "maxReceivesPerSecond": 3 },
  "requestPolicy": { "headerContentType": "application/json" }
}`
	bareDoc = `{"minDelayTarget": 5, "maxDelayTarget": 260, "numRetries": 10, "backoffFunction": "Geometric"}`
)

func TestParseShapes(t *testing.T) {
	want := retry.HealthyRetryPolicy{MinDelayTarget: 5, MaxDelayTarget: 260, NumRetries: 10, BackoffFunction: "geometric"}
	for name, tc := range map[string]struct {
		doc      string
		throttle int
	}{
		"topic":        {topicDoc, 3},
		"subscription": {subscriptionDoc, 3},
		"bare":         {bareDoc, 0},
	} {
		t.Run(name, func(t *testing.T) {
			p := mustParse(t, tc.doc)
			if p.HealthyRetryPolicy != want {
				t.Errorf("HealthyRetryPolicy = %+v, want %+v", p.HealthyRetryPolicy, want)
			}
			if p.ThrottlePolicy.MaxReceivesPerSecond != tc.throttle {
				t.Errorf("maxReceivesPerSecond = %d, want %d", p.ThrottlePolicy.MaxReceivesPerSecond, tc.throttle)
			}
		})
	}
}

func TestParseDefaultsAndIgnoredFields(t *testing.T) {
	def := retry.DefaultDeliveryPolicy().HealthyRetryPolicy
	for _, doc := range []string{
		`{}`, ` { } `, `{"healthyRetryPolicy": null}`, `{"healthyRetryPolicy": {}}`,
		`{"healthyRetryPolicy": {"numRetries": null, "backoffFunction": null}}`,
		`{"http": null}`, `{"http": {}}`, `{"http": {"defaultHealthyRetryPolicy": null, "defaultThrottlePolicy": null}}`,
		`{"sicklyRetryPolicy": null, "guaranteed": false}`,
		`{"sicklyRetryPolicy": {"numRetries": 99}, "guaranteed": true, "requestPolicy": {"x": 1}}`,
		`{"healthyRetryPolicy": {"numRetries": 3}, "throttlePolicy": null}`,
		`{"throttlePolicy": {"maxReceivesPerSecond": null}}`,
		`{"numRetries": 3.0, "minDelayTarget": 2e1}`,
	} {
		p, err := retry.ParseDeliveryPolicy([]byte(doc))
		if err != nil {
			t.Errorf("ParseDeliveryPolicy(%s): %v", doc, err)
			continue
		}
		if p.HealthyRetryPolicy != def || p.ThrottlePolicy.MaxReceivesPerSecond != 0 {
			t.Errorf("ParseDeliveryPolicy(%s) = %+v, want SNS's defaults", doc, p)
		}
	}
}

// TestParseErrors checks that each error names the field at fault, by its
// path in the input, and says what to do.
func TestParseErrors(t *testing.T) {
	tests := []struct {
		doc   string
		field string // "" for malformed JSON
		says  string // a fragment of the message
	}{
		{``, "", "empty"},
		{`{"healthyRetryPolicy": {`, "", "malformed JSON"},
		{`{"numRetries": 3,}`, "", "at byte"},
		{`[{"numRetries": 3}]`, "", "JSON object, not an array"},
		{`"linear"`, "", "not a string"},
		{`null`, "", "not null"},
		{`{} {}`, "", "malformed JSON"},
		{`{"healthyRetryPolicy": {"numRetrys": 5}}`, "healthyRetryPolicy.numRetrys", `did you mean "numRetries"`},
		{`{"healthyRetryPolicy": {"MinDelayTarget": 5}}`, "healthyRetryPolicy.MinDelayTarget", `did you mean "minDelayTarget"`},
		{`{"healthyRetryPolicies": {}}`, "healthyRetryPolicies", `did you mean "healthyRetryPolicy"`},
		{`{"http": {"healthyRetryPolicy": {}}}`, "http.healthyRetryPolicy", `did you mean "defaultHealthyRetryPolicy"`},
		{`{"throttlePolicy": {"maxReceivePerSecond": 5}}`, "throttlePolicy.maxReceivePerSecond", `did you mean "maxReceivesPerSecond"`},
		{`{"bogus": 1}`, "bogus", "unknown field"},
		{`{"": 1}`, `""`, "unknown field"},
		{`{"healthyRetryPolicy": {}, "numRetries": 4}`, "numRetries", "move \"numRetries\" inside healthyRetryPolicy"},
		{`{"numRetries": 4, "throttlePolicy": {}}`, "throttlePolicy", "move \"numRetries\" inside healthyRetryPolicy"},
		{`{"http": {}, "healthyRetryPolicy": {}}`, "healthyRetryPolicy", "use one shape"},
		{`{"numRetries": 3, "numRetries": 4}`, "numRetries", "more than once"},
		{`{"healthyRetryPolicy": []}`, "healthyRetryPolicy", "must be a JSON object, not an array"},
		{`{"healthyRetryPolicy": {"numRetries": "3"}}`, "healthyRetryPolicy.numRetries", "without the quotes"},
		{`{"healthyRetryPolicy": {"numRetries": 2.5}}`, "healthyRetryPolicy.numRetries", "not a whole number"},
		{`{"healthyRetryPolicy": {"numRetries": 1e400}}`, "healthyRetryPolicy.numRetries", "out of range"},
		{`{"healthyRetryPolicy": {"numRetries": true}}`, "healthyRetryPolicy.numRetries", "not a boolean"},
		{`{"healthyRetryPolicy": {"backoffFunction": "expo"}}`, "healthyRetryPolicy.backoffFunction", "linear, arithmetic, geometric or exponential"},
		{`{"healthyRetryPolicy": {"backoffFunction": ""}}`, "healthyRetryPolicy.backoffFunction", "not a backoff function"},
		{`{"healthyRetryPolicy": {"backoffFunction": 1}}`, "healthyRetryPolicy.backoffFunction", "must be a string"},
		{`{"healthyRetryPolicy": {"minDelayTarget": 0}}`, "healthyRetryPolicy.minDelayTarget", "1 or more"},
		{`{"healthyRetryPolicy": {"minDelayTarget": 30}}`, "healthyRetryPolicy.minDelayTarget", "above maxDelayTarget (20)"},
		{`{"healthyRetryPolicy": {"maxDelayTarget": 3601}}`, "healthyRetryPolicy.maxDelayTarget", "ParseDeliveryPolicySQS"},
		{`{"http": {"defaultHealthyRetryPolicy": {"maxDelayTarget": 3601}}}`, "http.defaultHealthyRetryPolicy.maxDelayTarget", "3600"},
		{`{"maxDelayTarget": 3601}`, "maxDelayTarget", "3600"},
		{`{"healthyRetryPolicy": {"numRetries": 101, "maxDelayTarget": 20}}`, "healthyRetryPolicy.numRetries", "limit of 100"},
		{`{"healthyRetryPolicy": {"numRetries": -1}}`, "healthyRetryPolicy.numRetries", "negative"},
		{`{"healthyRetryPolicy": {"numNoDelayRetries": -1}}`, "healthyRetryPolicy.numNoDelayRetries", "negative"},
		{`{"healthyRetryPolicy": {"numRetries": 3, "numNoDelayRetries": 2, "numMaxDelayRetries": 2}}`, "healthyRetryPolicy.numRetries", "at least 4"},
		{`{"healthyRetryPolicy": {"numRetries": 100, "minDelayTarget": 60, "maxDelayTarget": 60}}`, "healthyRetryPolicy.numRetries", "in total"},
		{`{"throttlePolicy": {"maxReceivesPerSecond": 0}}`, "throttlePolicy.maxReceivesPerSecond", "leave the field out"},
		{`{"http": {"defaultThrottlePolicy": {"maxReceivesPerSecond": -2}}}`, "http.defaultThrottlePolicy.maxReceivesPerSecond", "1 or more"},
	}
	for _, tt := range tests {
		_, err := retry.ParseDeliveryPolicy([]byte(tt.doc))
		if err == nil {
			t.Errorf("ParseDeliveryPolicy(%s) = nil error, want one about %q", tt.doc, tt.field)
			continue
		}
		var pe *retry.PolicyError
		if !errors.As(err, &pe) {
			t.Errorf("ParseDeliveryPolicy(%s) = %T %v, want a *PolicyError matching ErrInvalidPolicy", tt.doc, err, err)
			continue
		}
		if pe.Field != tt.field {
			t.Errorf("ParseDeliveryPolicy(%s): Field = %q, want %q (%v)", tt.doc, pe.Field, tt.field, err)
		}
		if !strings.Contains(err.Error(), tt.says) {
			t.Errorf("ParseDeliveryPolicy(%s) = %q, want it to say %q", tt.doc, err, tt.says)
		}
		if tt.field == "" && !strings.Contains(err.Error(), "malformed JSON") {
			t.Errorf("ParseDeliveryPolicy(%s) = %q, want it to say the JSON is malformed", tt.doc, err)
		}
	}
}

func TestSyntaxErrorIsUnwrapped(t *testing.T) {
	_, err := retry.ParseDeliveryPolicy([]byte(`{"numRetries": }`))
	var se *json.SyntaxError
	if !errors.As(err, &se) {
		t.Fatalf("error %v does not wrap a *json.SyntaxError", err)
	}
}

// TestSQSLimits checks where SQS allows more than SNS, and where it does not.
func TestSQSLimits(t *testing.T) {
	tests := []struct {
		doc       string
		snsOK     bool
		sqsOK     bool
		sqsField  string
		sqsSaying string
	}{
		{`{"maxDelayTarget": 3600, "numRetries": 1}`, true, true, "", ""},
		{`{"maxDelayTarget": 43200, "minDelayTarget": 43200, "numRetries": 1}`, false, true, "", ""},
		{`{"maxDelayTarget": 43201}`, false, false, "maxDelayTarget", "12 h"},
		{`{"numRetries": 999, "minDelayTarget": 1, "maxDelayTarget": 1}`, false, true, "", ""},
		{`{"numRetries": 1000, "minDelayTarget": 1, "maxDelayTarget": 1}`, false, false, "numRetries", "maxReceiveCount"},
		{`{"numRetries": 100, "minDelayTarget": 3600, "maxDelayTarget": 3600}`, false, true, "", ""},
		{`{"minDelayTarget": 0}`, false, false, "minDelayTarget", "1 or more"},
	}
	for _, tt := range tests {
		_, snsErr := retry.ParseDeliveryPolicy([]byte(tt.doc))
		if (snsErr == nil) != tt.snsOK {
			t.Errorf("ParseDeliveryPolicy(%s) = %v, want ok=%v", tt.doc, snsErr, tt.snsOK)
		}
		p, sqsErr := retry.ParseDeliveryPolicySQS([]byte(tt.doc))
		if (sqsErr == nil) != tt.sqsOK {
			t.Errorf("ParseDeliveryPolicySQS(%s) = %v, want ok=%v", tt.doc, sqsErr, tt.sqsOK)
		}
		if sqsErr != nil {
			var pe *retry.PolicyError
			if !errors.As(sqsErr, &pe) || pe.Field != tt.sqsField || !strings.Contains(sqsErr.Error(), tt.sqsSaying) {
				t.Errorf("ParseDeliveryPolicySQS(%s) = %v, want field %q saying %q", tt.doc, sqsErr, tt.sqsField, tt.sqsSaying)
			}
			continue
		}
		for _, d := range p.Delays() {
			if d > 12*time.Hour {
				t.Errorf("ParseDeliveryPolicySQS(%s): delay %v above the visibility limit", tt.doc, d)
			}
		}
	}
}

func TestMarshalRoundTrip(t *testing.T) {
	for _, doc := range []string{topicDoc, subscriptionDoc, bareDoc, seedPolicy50, `{}`} {
		p := mustParse(t, doc)
		out, err := json.Marshal(p)
		if err != nil {
			t.Fatalf("Marshal(%+v): %v", p, err)
		}
		q := mustParse(t, string(out))
		if q.HealthyRetryPolicy != p.HealthyRetryPolicy || q.ThrottlePolicy != p.ThrottlePolicy {
			t.Errorf("round trip of %s through %s gave %+v", doc, out, q)
		}
	}
	// The marshalled shape is the subscription one, with every retry field.
	out, _ := json.Marshal(retry.DefaultDeliveryPolicy())
	want := `{"healthyRetryPolicy":{"minDelayTarget":20,"maxDelayTarget":20,"numRetries":3,"numNoDelayRetries":0,"numMinDelayRetries":0,"numMaxDelayRetries":0,"backoffFunction":"linear"}}`
	if string(out) != want {
		t.Errorf("Marshal(DefaultDeliveryPolicy()) = %s, want %s", out, want)
	}
	// An empty BackoffFunction is written as linear; an unknown one fails.
	p := retry.DefaultDeliveryPolicy()
	p.HealthyRetryPolicy.BackoffFunction = ""
	if out, err := json.Marshal(p); err != nil || !strings.Contains(string(out), `"backoffFunction":"linear"`) {
		t.Errorf("Marshal with empty backoffFunction = %s, %v", out, err)
	}
	p.HealthyRetryPolicy.BackoffFunction = "cubic"
	if _, err := json.Marshal(p); err == nil {
		t.Error("Marshal with an unknown backoffFunction succeeded")
	}
}

// TestUnmarshalJSON checks DeliveryPolicy embedded in a configuration struct.
func TestUnmarshalJSON(t *testing.T) {
	var cfg struct {
		Queue  string               `json:"queue"`
		Policy retry.DeliveryPolicy `json:"policy"`
	}
	cfg.Policy.Jitter = "full"
	err := json.Unmarshal([]byte(`{"queue": "orders", "policy": {"http": {"defaultHealthyRetryPolicy": {"maxDelayTarget": 9000}}}}`), &cfg)
	if err != nil {
		t.Fatalf("Unmarshal: %v", err)
	}
	if cfg.Policy.HealthyRetryPolicy.MaxDelayTarget != 9000 || cfg.Policy.HealthyRetryPolicy.NumRetries != 3 {
		t.Errorf("Policy = %+v, want maxDelayTarget 9000 and the other defaults", cfg.Policy)
	}
	if cfg.Policy.Jitter != "full" {
		t.Error("Unmarshal reset Jitter")
	}
	// Unmarshal does not apply limits; the caller picks SNS or SQS.
	if cfg.Policy.Validate() == nil || cfg.Policy.ValidateSQS() != nil {
		t.Errorf("Validate() = %v, ValidateSQS() = %v; want SNS to refuse 9000 s and SQS to accept it", cfg.Policy.Validate(), cfg.Policy.ValidateSQS())
	}
	// Strictness is the same as ParseDeliveryPolicy's.
	err = json.Unmarshal([]byte(`{"policy": {"healthyRetryPolicy": {"numRetrys": 5}}}`), &cfg)
	if pe := new(retry.PolicyError); !errors.As(err, &pe) {
		t.Errorf("Unmarshal with a typo = %v, want a *PolicyError", err)
	}
	// null leaves the policy alone.
	before := cfg.Policy.HealthyRetryPolicy
	if err := json.Unmarshal([]byte(`{"policy": null}`), &cfg); err != nil || cfg.Policy.HealthyRetryPolicy != before {
		t.Errorf("Unmarshal null = %v, policy %+v", err, cfg.Policy.HealthyRetryPolicy)
	}
}

func TestBackoffFunctionNames(t *testing.T) {
	p, err := retry.ParseDeliveryPolicy([]byte(`{"backoffFunction": "EXPONENTIAL"}`))
	if f := p.HealthyRetryPolicy.BackoffFunction; err != nil || f != "exponential" {
		t.Errorf("backoffFunction EXPONENTIAL parsed as %q, %v", f, err)
	}
	for _, bad := range []string{"", "expo"} {
		if _, err := retry.ParseDeliveryPolicy([]byte(`{"backoffFunction": "` + bad + `"}`)); err == nil {
			t.Errorf("backoffFunction %q accepted", bad)
		}
	}
	for f, want := range map[string]string{"": "linear", "Geometric": "geometric", "exponential": "exponential"} {
		p := retry.DefaultDeliveryPolicy()
		p.HealthyRetryPolicy.BackoffFunction = f
		if b, err := json.Marshal(p); err != nil || !strings.Contains(string(b), `"backoffFunction":"`+want+`"`) {
			t.Errorf("Marshal with backoffFunction %q = %s, %v; want %q", f, b, err, want)
		}
	}
	p = retry.DefaultDeliveryPolicy()
	p.HealthyRetryPolicy.BackoffFunction = "Arithmetic"
	if err := p.Validate(); err != nil {
		t.Errorf("Validate() with mixed-case backoffFunction = %v", err)
	}
}

package sqstest_test

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/sqsworker/sqsworker/harness/conformance"
	"github.com/sqsworker/sqsworker/sqstest"
)

// TestConformanceFake holds the fake to real SQS's behaviour: the whole
// conformance suite, with no declared quirks, each behaviour on a fresh
// Fake inside its own synctest bubble, so its waits (seconds, and the 60 s
// retention and 12 h visibility cap) take no real time.
func TestConformanceFake(t *testing.T) {
	conformance.Run(t, conformance.Backend{
		Name:      "sqstest",
		NewClient: func(*testing.T) conformance.API { return sqstest.For(t) },
		Sleep:     time.Sleep, // virtual inside the bubble
		Wrap: func(t *testing.T, f func(*testing.T)) {
			synctest.Test(t, f)
		},
		Fast: true,
		LoseResponse: func(api conformance.API, op string) {
			api.(*sqstest.Fake).InjectFault(sqstest.Fault{API: op, AfterEffect: true, Code: "InternalError", Times: 1})
		},
	})
}

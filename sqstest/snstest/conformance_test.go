package snstest_test

import (
	"testing"
	"testing/synctest"

	"github.com/sqsworker/sqsworker/harness/conformance"
	"github.com/sqsworker/sqsworker/sqstest"
	"github.com/sqsworker/sqsworker/sqstest/snstest"
)

// TestConformanceFake holds the SNS fake, delivering into sqstest's fake,
// to real SNS's behaviour: the whole SNS suite with no declared quirks.
func TestConformanceFake(t *testing.T) {
	conformance.RunSNS(t, conformance.SNSBackend{
		Name: "snstest",
		NewClients: func(*testing.T) (conformance.SNSAPI, conformance.API) {
			queues := sqstest.For(t)
			return snstest.For(t, queues), queues
		},
		Wrap: func(t *testing.T, f func(*testing.T)) { synctest.Test(t, f) },
	})
}

func TestNewRefusesBadArguments(t *testing.T) {
	if f, err := snstest.New(nil); err == nil || f != nil {
		t.Errorf("New(nil queues) = %v, %v; want an error", f, err)
	}
	if f, err := snstest.New(sqstest.For(t), func(o *snstest.Options) { o.AccountID = "x" }); err == nil || f != nil {
		t.Errorf("New with a bad account = %v, %v; want an error", f, err)
	}
	if f, err := snstest.New(sqstest.For(t), func(o *snstest.Options) { o.DeliveryRetries = -1 }); err == nil || f != nil {
		t.Errorf("New with negative DeliveryRetries = %v, %v; want an error", f, err)
	}
}

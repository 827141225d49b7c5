package conformance_test

import (
	"testing"
	"time"

	"github.com/sqsworker/sqsworker/harness/conformance"
	"github.com/sqsworker/sqsworker/harness/testenv"
)

// TestConformanceEmulator runs the SQS conformance suite against the SQS
// endpoint testenv finds: fauxqs under `make test` (or when testenv starts
// the emulators itself), LocalStack or real SQS when AWS_ENDPOINT_URL_SQS
// and SQSWORKER_SQS_BACKEND say so. The backend's declared quirks come from
// conformance.QuirksFor.
func TestConformanceEmulator(t *testing.T) {
	endpoints := testenv.Get(t)
	client := testenv.SQS(t)
	t.Logf("SQS backend %q at %s (testenv started it: %v)", endpoints.Backend, endpoints.SQS, endpoints.Started)
	conformance.Run(t, conformance.Backend{
		Name:      endpoints.Backend,
		NewClient: func(*testing.T) conformance.API { return client },
		Sleep:     time.Sleep,
		Quirks:    conformance.QuirksFor(endpoints.Backend),
	})
}

// TestConformanceEmulatorSNS runs the SNS conformance suite against the
// endpoint testenv finds (fauxqs serves SNS on its SQS port), with the
// backend's declared SNS quirks.
func TestConformanceEmulatorSNS(t *testing.T) {
	endpoints := testenv.Get(t)
	sqsClient, snsClient := testenv.SQS(t), testenv.SNS(t)
	t.Logf("SNS backend %q at %s", endpoints.Backend, endpoints.SNS)
	conformance.RunSNS(t, conformance.SNSBackend{
		Name:       endpoints.Backend,
		NewClients: func(*testing.T) (conformance.SNSAPI, conformance.API) { return snsClient, sqsClient },
		Quirks:     conformance.SNSQuirksFor(endpoints.Backend),
	})
}

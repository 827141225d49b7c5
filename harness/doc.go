// Package harness is the root of sqsworker's test harness: the conformance
// suite run against the fake and the emulators (conformance), the lifecycle
// contract over both runtimes (contract), the chaos and fleet runs (chaos,
// fleetrun), the fault-injecting proxy (faultproxy), the mutation check
// (mutate), in-memory stand-ins for DynamoDB tables and CloudWatch's
// GetMetricData (dynamofake, cloudwatchfake), and the helpers the tests
// share (testenv, jsontest, fleettable, sqsdrain, sdkretry, sqsfake, sqsmsg).
//
// The harness is not part of the library's API and carries no compatibility
// promise: it lives apart from the runtime so that it may import every
// package of the library, while nothing of the library imports it (a test
// in internal/apicheck checks both). Users who want a test kit use sqstest.
package harness

// Package testenv gives tests a connection to a local AWS: SQS, DynamoDB
// and S3 endpoints taken from the standard AWS environment variables
// (AWS_ENDPOINT_URL, AWS_ENDPOINT_URL_SQS, AWS_ENDPOINT_URL_DYNAMODB,
// AWS_ENDPOINT_URL_S3), or, when none is set, the offline emulators started
// by localstack/start.sh (fauxqs serves S3 on its SQS port).
//
// When no endpoint can be had, a test is skipped with the reason — unless
// SQSWORKER_REQUIRE_INTEGRATION=1 (set by `make test`), where it fails:
// integration tests never disappear silently.
//
// Emulators that testenv starts itself are left running for the next run and
// are stopped with localstack/stop.sh; `make test` starts and stops its own.
package testenv

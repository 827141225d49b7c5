# lib.sh: shared settings and helpers for start.sh, stop.sh and with-aws.sh (sourced, not run).
# shellcheck shell=bash

sqs_port=${SQSWORKER_SQS_PORT:-9324}
ddb_port=${SQSWORKER_DYNAMODB_PORT:-8000}
# One directory per pair of ports: stacks on other ports (another checkout's,
# a benchmark's) keep their own pid files, so stopping one never forgets another.
run_dir=${SQSWORKER_LOCAL_AWS_DIR:-$here/.run/$sqs_port-$ddb_port}
start_timeout=${SQSWORKER_START_TIMEOUT:-60}

log() { echo "local-aws: $*" >&2; }
die() {
  echo "local-aws: error: $*" >&2
  exit 1
}

# pid_alive PIDFILE: the process recorded in PIDFILE is running.
pid_alive() {
  local pid
  [ -f "$1" ] || return 1
  pid=$(cat "$1" 2>/dev/null) || return 1
  [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null
}

sqs_answers() {
  curl -fsS -m 2 "http://127.0.0.1:$sqs_port/health" >/dev/null 2>&1
}

# DynamoDB Local answers any signed-looking request; ListTables with fake credentials is enough.
dynamodb_answers() {
  curl -sS -m 2 -o /dev/null -w '%{http_code}' \
    -H 'Content-Type: application/x-amz-json-1.0' \
    -H 'X-Amz-Target: DynamoDB_20120810.ListTables' \
    -H 'Authorization: AWS4-HMAC-SHA256 Credential=test/20260101/us-east-1/dynamodb/aws4_request, SignedHeaders=host, Signature=0' \
    -d '{}' "http://127.0.0.1:$ddb_port/" 2>/dev/null | grep -q '^200$'
}

print_env() {
  cat <<ENV
export AWS_ENDPOINT_URL_SQS=http://127.0.0.1:$sqs_port
export AWS_ENDPOINT_URL_SNS=http://127.0.0.1:$sqs_port
export AWS_ENDPOINT_URL_DYNAMODB=http://127.0.0.1:$ddb_port
export AWS_ENDPOINT_URL_S3=http://127.0.0.1:$sqs_port
export AWS_REGION=\${AWS_REGION:-us-east-1}
export AWS_ACCESS_KEY_ID=\${AWS_ACCESS_KEY_ID:-test}
export AWS_SECRET_ACCESS_KEY=\${AWS_SECRET_ACCESS_KEY:-test}
export SQSWORKER_SQS_BACKEND=fauxqs
ENV
}

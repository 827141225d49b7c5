#!/usr/bin/env bash
# with-aws.sh COMMAND [ARGS...] runs COMMAND with a local AWS configured.
#
# If AWS_ENDPOINT_URL, or both AWS_ENDPOINT_URL_SQS and AWS_ENDPOINT_URL_DYNAMODB, are
# set (LocalStack from docker-compose, say), COMMAND runs against them as they are.
# Otherwise the offline emulators are started with start.sh, COMMAND runs with their
# environment, and the emulators this call started are stopped again when it ends,
# whether COMMAND passed, failed or was interrupted. Exits with COMMAND's status.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=localstack/lib.sh
. "$here/lib.sh"

[ $# -gt 0 ] || die "usage: localstack/with-aws.sh COMMAND [ARGS...]"

if [ -n "${AWS_ENDPOINT_URL:-}" ] || { [ -n "${AWS_ENDPOINT_URL_SQS:-}" ] && [ -n "${AWS_ENDPOINT_URL_DYNAMODB:-}" ]; }; then
  log "using the configured endpoints (${AWS_ENDPOINT_URL:-$AWS_ENDPOINT_URL_SQS, $AWS_ENDPOINT_URL_DYNAMODB})"
  exec "$@"
fi

# Stop on exit only what was not already running before this call.
was_running=0
if pid_alive "$run_dir/fauxqs.pid" || pid_alive "$run_dir/dynamodb.pid"; then
  was_running=1
fi
cleanup() {
  if [ "$was_running" = 0 ]; then
    "$here/stop.sh" || true
  fi
}
trap cleanup EXIT
# Ctrl-C reaches COMMAND too (the terminal signals the whole process group):
# while COMMAND runs, its status is the one to exit with, so a program that
# handles the interrupt and exits 0 (make console) makes this script exit 0,
# and one the interrupt kills makes it exit 130. (A trap that exits at once
# would turn every interrupted run into a failure.)
trap ':' INT
trap 'exit 143' TERM

env_lines=$("$here/start.sh")
eval "$env_lines"
set +e
"$@"
status=$?
set -e
exit "$status"

#!/usr/bin/env bash
# stop.sh stops the emulators that localstack/start.sh started, and nothing else:
# it signals only the process groups whose ids start.sh recorded, and only while
# they still run the command start.sh launched. Stopping when nothing runs is fine.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=localstack/lib.sh
. "$here/lib.sh"

# stop_one NAME PATTERN: stop the process group recorded in NAME.pid if its command matches PATTERN.
stop_one() {
  local name=$1 pattern=$2 pidfile="$run_dir/$1.pid" pid
  if ! pid_alive "$pidfile"; then
    rm -f "$pidfile"
    return
  fi
  pid=$(cat "$pidfile")
  if ! tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -q -- "$pattern"; then
    log "pid $pid in $pidfile is no longer $name; leaving it alone"
    rm -f "$pidfile"
    return
  fi
  log "stopping $name (pid $pid)"
  kill -TERM -- "-$pid" 2>/dev/null || kill -TERM "$pid" 2>/dev/null || true
  for _ in $(seq 1 50); do
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.1
  done
  if kill -0 "$pid" 2>/dev/null; then
    log "$name did not stop on SIGTERM; sending SIGKILL"
    kill -KILL -- "-$pid" 2>/dev/null || kill -KILL "$pid" 2>/dev/null || true
  fi
  rm -f "$pidfile"
}

stop_one fauxqs fauxqs-server.mjs
stop_one dynamodb DynamoDBLocal.jar

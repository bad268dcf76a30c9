#!/usr/bin/env bash
# GCS for tests: fake-gcs-server (in-memory backend) on 127.0.0.1, over plain HTTP. The Google
# client libraries, and so ckpt, send every request to it when STORAGE_EMULATOR_HOST is set.
#
#   eval "$(.ci/gcs.sh start)"   # builds fake-gcs-server if needed, starts it, prints exports
#   go test ./...                # tests read CKPT_TEST_GCS_ENDPOINT and make their own buckets
#   .ci/gcs.sh stop              # stops the server started above (uses CKPT_TEST_GCS_PID)
#   .ci/gcs.sh run CMD ARGS...   # start, run CMD with the exports, stop; exit with CMD's status
#
# Environment: CKPT_GCS_PORT (default 4443; the next free port is used if it is busy).
# Only the exports go to stdout; progress and errors go to stderr.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BIN=$ROOT/.ci/bin/fake-gcs-server
VERSION=v1.56.1

log() { echo "gcs.sh: $*" >&2; }

port_busy() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

build() {
  [ -x "$BIN" ] && return 0
  log "building fake-gcs-server $VERSION into $ROOT/.ci/bin (about 3-5 minutes cold)"
  mkdir -p "$ROOT/.ci/bin"
  GOTOOLCHAIN=local GOFLAGS= GOBIN=$ROOT/.ci/bin go install "github.com/fsouza/fake-gcs-server@$VERSION" >&2
}

start() {
  command -v curl >/dev/null || { log "curl is required"; exit 1; }
  build
  local port=${CKPT_GCS_PORT:-4443} tries=0
  while port_busy "$port"; do
    tries=$((tries + 1))
    [ "$tries" -lt 100 ] || { log "no free port from ${CKPT_GCS_PORT:-4443}"; exit 1; }
    port=$((port + 1))
  done
  local logf
  logf=$(mktemp "${TMPDIR:-/tmp}/ckpt-gcs.XXXXXX.log")
  # Detached from our stdout: $(...) in the caller waits for every writer to exit.
  "$BIN" -scheme http -host 127.0.0.1 -port "$port" -backend memory -log-level error \
    -external-url "http://127.0.0.1:$port" -public-host "127.0.0.1:$port" </dev/null >"$logf" 2>&1 &
  local pid=$!
  local code=000
  for _ in $(seq 200); do
    if ! kill -0 "$pid" 2>/dev/null; then
      log "fake-gcs-server exited during start-up; log:"; cat "$logf" >&2; exit 1
    fi
    code=$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$port/storage/v1/b" || true)
    [ "$code" = 200 ] && break
    sleep 0.05
  done
  if [ "$code" != 200 ]; then
    log "fake-gcs-server on port $port not ready after 10s (last HTTP status $code); log in $logf"
    kill "$pid" 2>/dev/null || true
    exit 1
  fi
  log "fake-gcs-server pid $pid ready on http://127.0.0.1:$port (log $logf)"
  echo "export CKPT_TEST_GCS_ENDPOINT=http://127.0.0.1:$port CKPT_TEST_GCS_PID=$pid CKPT_TEST_GCS_LOG=$logf"
}

stop() {
  local pid=${1:-${CKPT_TEST_GCS_PID:-}}
  if [ -z "$pid" ]; then log "stop: no pid (set CKPT_TEST_GCS_PID, e.g. via eval \"\$(.ci/gcs.sh start)\", or pass it)"; exit 1; fi
  # Only ever kill our own server, even if the pid was recycled. (comm is cut to 15 characters.)
  if [ "$(ps -p "$pid" -o comm= 2>/dev/null || true)" = fake-gcs-server ]; then
    kill "$pid"
    for _ in $(seq 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.05; done
    log "stopped fake-gcs-server pid $pid"
  else
    log "pid $pid is not a running fake-gcs-server; nothing to stop"
  fi
  local logf=${CKPT_TEST_GCS_LOG:-}
  if [ -n "$logf" ] && [ -f "$logf" ]; then rm -f "$logf"; fi
  echo "unset CKPT_TEST_GCS_ENDPOINT CKPT_TEST_GCS_PID CKPT_TEST_GCS_LOG"
}

run() {
  [ $# -gt 0 ] || { log "run: missing command"; exit 2; }
  eval "$(start)"
  trap 'stop >/dev/null' EXIT
  local rc=0
  "$@" || rc=$?
  exit "$rc"
}

case "${1:-}" in
  start) start ;;
  stop) shift; stop "$@" ;;
  build) build ;;
  run) shift; run "$@" ;;
  *) echo "usage: $0 start | stop [pid] | build | run CMD [ARGS...]" >&2; exit 2 ;;
esac

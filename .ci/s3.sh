#!/usr/bin/env bash
# Real S3 for tests: versitygw (posix backend) on 127.0.0.1, with SigV4 and
# atomic conditional writes (If-None-Match), as measured in
# docs/ci-infra.md §2.
#
#   eval "$(.ci/s3.sh start)"   # builds versitygw if needed, starts it, prints exports
#   go test ./...               # tests read CKPT_TEST_S3_* and make their own buckets
#   .ci/s3.sh stop              # stops the server started above (uses CKPT_TEST_S3_PID)
#   .ci/s3.sh run CMD ARGS...   # start, run CMD with the exports, stop; exit with CMD's status
#
# Environment: CKPT_S3_PORT (default 7070; the next free port is used if it is
# busy), CKPT_S3_DATA (data directory, default a fresh temp dir, removed by stop).
# Only the exports go to stdout; progress and errors go to stderr.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BIN=$ROOT/.ci/bin/versitygw
VERSION=v1.8.0
ACCESS=ckptkey
SECRET=ckptsecret123

log() { echo "s3.sh: $*" >&2; }

port_busy() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

build() {
  [ -x "$BIN" ] && return 0
  log "building versitygw $VERSION into $ROOT/.ci/bin (about 4 minutes cold)"
  mkdir -p "$ROOT/.ci/bin"
  GOTOOLCHAIN=local GOBIN=$ROOT/.ci/bin go install "github.com/versity/versitygw/cmd/versitygw@$VERSION" >&2
}

start() {
  command -v curl >/dev/null || { log "curl is required"; exit 1; }
  build
  local port=${CKPT_S3_PORT:-7070} tries=0
  while port_busy "$port"; do
    tries=$((tries + 1))
    [ "$tries" -lt 100 ] || { log "no free port from ${CKPT_S3_PORT:-7070}"; exit 1; }
    port=$((port + 1))
  done
  local data=${CKPT_S3_DATA:-}
  if [ -z "$data" ]; then data=$(mktemp -d "${TMPDIR:-/tmp}/ckpt-s3.XXXXXX"); fi
  mkdir -p "$data/data"
  # Detached from our stdout: $(...) in the caller waits for every writer to exit.
  "$BIN" --access "$ACCESS" --secret "$SECRET" --port "127.0.0.1:$port" --quiet \
    posix "$data/data" </dev/null >"$data/versitygw.log" 2>&1 &
  local pid=$!
  local code=000
  for _ in $(seq 200); do
    if ! kill -0 "$pid" 2>/dev/null; then
      log "versitygw exited during start-up; log:"; cat "$data/versitygw.log" >&2; exit 1
    fi
    code=$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$port/" || true)
    [ "$code" = 403 ] && break
    sleep 0.05
  done
  if [ "$code" != 403 ]; then
    log "versitygw on port $port not ready after 10s (last HTTP status $code); log in $data/versitygw.log"
    kill "$pid" 2>/dev/null || true
    exit 1
  fi
  log "versitygw pid $pid ready on http://127.0.0.1:$port (data $data)"
  echo "export CKPT_TEST_S3_ENDPOINT=http://127.0.0.1:$port CKPT_TEST_S3_ACCESS_KEY=$ACCESS CKPT_TEST_S3_SECRET_KEY=$SECRET CKPT_TEST_S3_PID=$pid CKPT_TEST_S3_DATA=$data"
}

stop() {
  local pid=${1:-${CKPT_TEST_S3_PID:-}}
  if [ -z "$pid" ]; then log "stop: no pid (set CKPT_TEST_S3_PID, e.g. via eval \"\$(.ci/s3.sh start)\", or pass it)"; exit 1; fi
  # Only ever kill our own server, even if the pid was recycled.
  if [ "$(ps -p "$pid" -o comm= 2>/dev/null || true)" = versitygw ]; then
    kill "$pid"
    for _ in $(seq 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.05; done
    log "stopped versitygw pid $pid"
  else
    log "pid $pid is not a running versitygw; nothing to stop"
  fi
  local data=${CKPT_TEST_S3_DATA:-}
  if [ -n "$data" ] && [ -z "${CKPT_S3_DATA:-}" ] && [ -f "$data/versitygw.log" ]; then
    rm -rf "$data"
  fi
  echo "unset CKPT_TEST_S3_ENDPOINT CKPT_TEST_S3_ACCESS_KEY CKPT_TEST_S3_SECRET_KEY CKPT_TEST_S3_PID CKPT_TEST_S3_DATA"
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

#!/usr/bin/env bash
# GCS for tests: fake-gcs-server (in-memory backend) on 127.0.0.1, over plain HTTP. ckpt, like
# the Google client libraries, sends every request to it when STORAGE_EMULATOR_HOST is set.
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
NAME=gcs.sh
BIN=$ROOT/.ci/bin/fake-gcs-server
VERSION=v1.56.1
. "$ROOT/.ci/lib.sh"

build() {
  [ -x "$BIN" ] && return 0
  log "building fake-gcs-server $VERSION into $ROOT/.ci/bin (about 3-5 minutes cold)"
  mkdir -p "$ROOT/.ci/bin"
  GOTOOLCHAIN=local GOFLAGS= GOBIN=$ROOT/.ci/bin go install "github.com/fsouza/fake-gcs-server@$VERSION" >&2
}

start() {
  need curl
  build
  local port logf
  port=$(free_port "${CKPT_GCS_PORT:-4443}")
  logf=$(mktemp "${TMPDIR:-/tmp}/ckpt-gcs.XXXXXX.log")
  # Detached from our stdout: $(...) in the caller waits for every writer to exit.
  "$BIN" -scheme http -host 127.0.0.1 -port "$port" -backend memory -log-level error \
    -external-url "http://127.0.0.1:$port" -public-host "127.0.0.1:$port" </dev/null >"$logf" 2>&1 &
  local pid=$!
  wait_http "$pid" "$logf" "http://127.0.0.1:$port/storage/v1/b" 200 200 "fake-gcs-server on port $port"
  log "fake-gcs-server pid $pid ready on http://127.0.0.1:$port (log $logf)"
  echo "export CKPT_TEST_GCS_ENDPOINT=http://127.0.0.1:$port CKPT_TEST_GCS_PID=$pid CKPT_TEST_GCS_LOG=$logf"
}

stop() {
  local pid=${1:-${CKPT_TEST_GCS_PID:-}}
  if [ -z "$pid" ]; then log "stop: no pid (set CKPT_TEST_GCS_PID, e.g. via eval \"\$(.ci/gcs.sh start)\", or pass it)"; exit 1; fi
  stop_pid "$pid" fake-gcs-server fake-gcs-server
  local logf=${CKPT_TEST_GCS_LOG:-}
  if [ -n "$logf" ] && [ -f "$logf" ]; then rm -f "$logf"; fi
  echo "unset CKPT_TEST_GCS_ENDPOINT CKPT_TEST_GCS_PID CKPT_TEST_GCS_LOG"
}

main "$@"

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
NAME=s3.sh
BIN=$ROOT/.ci/bin/versitygw
VERSION=v1.8.0
ACCESS=ckptkey
SECRET=ckptsecret123
. "$ROOT/.ci/lib.sh"

build() {
  [ -x "$BIN" ] && return 0
  log "building versitygw $VERSION into $ROOT/.ci/bin (about 4 minutes cold)"
  mkdir -p "$ROOT/.ci/bin"
  GOTOOLCHAIN=local GOBIN=$ROOT/.ci/bin go install "github.com/versity/versitygw/cmd/versitygw@$VERSION" >&2
}

start() {
  need curl
  build
  local port data
  port=$(free_port "${CKPT_S3_PORT:-7070}")
  data=${CKPT_S3_DATA:-}
  if [ -z "$data" ]; then data=$(mktemp -d "${TMPDIR:-/tmp}/ckpt-s3.XXXXXX"); fi
  mkdir -p "$data/data"
  # Detached from our stdout: $(...) in the caller waits for every writer to exit.
  "$BIN" --access "$ACCESS" --secret "$SECRET" --port "127.0.0.1:$port" --quiet \
    posix "$data/data" </dev/null >"$data/versitygw.log" 2>&1 &
  local pid=$!
  wait_http "$pid" "$data/versitygw.log" "http://127.0.0.1:$port/" 403 200 "versitygw on port $port"
  log "versitygw pid $pid ready on http://127.0.0.1:$port (data $data)"
  echo "export CKPT_TEST_S3_ENDPOINT=http://127.0.0.1:$port CKPT_TEST_S3_ACCESS_KEY=$ACCESS CKPT_TEST_S3_SECRET_KEY=$SECRET CKPT_TEST_S3_PID=$pid CKPT_TEST_S3_DATA=$data"
}

stop() {
  local pid=${1:-${CKPT_TEST_S3_PID:-}}
  if [ -z "$pid" ]; then log "stop: no pid (set CKPT_TEST_S3_PID, e.g. via eval \"\$(.ci/s3.sh start)\", or pass it)"; exit 1; fi
  stop_pid "$pid" versitygw versitygw
  local data=${CKPT_TEST_S3_DATA:-}
  if [ -n "$data" ] && [ -z "${CKPT_S3_DATA:-}" ] && [ -f "$data/versitygw.log" ]; then
    rm -rf "$data"
  fi
  echo "unset CKPT_TEST_S3_ENDPOINT CKPT_TEST_S3_ACCESS_KEY CKPT_TEST_S3_SECRET_KEY CKPT_TEST_S3_PID CKPT_TEST_S3_DATA"
}

main "$@"

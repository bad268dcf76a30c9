#!/usr/bin/env bash
# Azure Blob Storage for tests: Azurite's blob service (in memory) on 127.0.0.1, with its
# well-known development account devstoreaccount1 and Shared Key authentication. ckpt reaches it
# through AZURE_STORAGE_CONNECTION_STRING, which carries the endpoint and the key.
#
#   eval "$(.ci/azure.sh start)"   # installs Azurite if needed, starts it, prints exports
#   go test ./...                  # tests read CKPT_TEST_AZURE_CONNECTION_STRING and make their own containers
#   .ci/azure.sh stop              # stops the server started above (uses CKPT_TEST_AZURE_PID)
#   .ci/azure.sh run CMD ARGS...   # start, run CMD with the exports, stop; exit with CMD's status
#
# Environment: CKPT_AZURE_PORT (default 10000; the next free port is used if it is busy).
# Only the exports go to stdout; progress and errors go to stderr.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
DIR=$ROOT/.ci/azurite
BIN=$DIR/node_modules/.bin/azurite-blob
VERSION=3.37.0
ACCOUNT=devstoreaccount1
# Azurite's published development key (not a secret).
KEY='Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=='

log() { echo "azure.sh: $*" >&2; }

port_busy() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

build() {
  [ -x "$BIN" ] && return 0
  command -v npm >/dev/null || { log "npm is required (apt-get install nodejs npm)"; exit 1; }
  log "installing Azurite $VERSION into $DIR (about 3 minutes cold)"
  mkdir -p "$DIR"
  npm install --no-audit --no-fund --loglevel=error --prefix "$DIR" "azurite@$VERSION" >&2
}

start() {
  command -v curl >/dev/null || { log "curl is required"; exit 1; }
  build
  local port=${CKPT_AZURE_PORT:-10000} tries=0
  while port_busy "$port"; do
    tries=$((tries + 1))
    [ "$tries" -lt 100 ] || { log "no free port from ${CKPT_AZURE_PORT:-10000}"; exit 1; }
    port=$((port + 1))
  done
  local data
  data=$(mktemp -d "${TMPDIR:-/tmp}/ckpt-azure.XXXXXX")
  # No telemetry (the tests reach nothing but 127.0.0.1); in-memory blobs; any API version the
  # SDK sends. Detached from our stdout: $(...) in the caller waits for every writer to exit.
  (cd "$data" && exec "$BIN" --blobHost 127.0.0.1 --blobPort "$port" --inMemoryPersistence --disableTelemetry \
    --skipApiVersionCheck --silent) </dev/null >"$data/azurite.log" 2>&1 &
  local pid=$!
  local code=000
  for _ in $(seq 1200); do
    if ! kill -0 "$pid" 2>/dev/null; then
      log "Azurite exited during start-up; log:"; cat "$data/azurite.log" >&2; exit 1
    fi
    code=$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$port/$ACCOUNT?comp=list" || true)
    [ "$code" != 000 ] && break
    sleep 0.05
  done
  if [ "$code" = 000 ]; then
    log "Azurite on port $port not ready after a minute; log in $data/azurite.log"
    kill "$pid" 2>/dev/null || true
    exit 1
  fi
  log "Azurite pid $pid ready on http://127.0.0.1:$port/$ACCOUNT (data $data)"
  local cs="DefaultEndpointsProtocol=http;AccountName=$ACCOUNT;AccountKey=$KEY;BlobEndpoint=http://127.0.0.1:$port/$ACCOUNT;"
  echo "export CKPT_TEST_AZURE_CONNECTION_STRING='$cs' CKPT_TEST_AZURE_PID=$pid CKPT_TEST_AZURE_DATA=$data"
}

stop() {
  local pid=${1:-${CKPT_TEST_AZURE_PID:-}}
  if [ -z "$pid" ]; then log "stop: no pid (set CKPT_TEST_AZURE_PID, e.g. via eval \"\$(.ci/azure.sh start)\", or pass it)"; exit 1; fi
  # Only ever kill our own server, even if the pid was recycled: Azurite is a node process
  # running azurite-blob.
  if ps -p "$pid" -o args= 2>/dev/null | grep -q azurite-blob; then
    kill "$pid"
    for _ in $(seq 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.05; done
    log "stopped Azurite pid $pid"
  else
    log "pid $pid is not a running Azurite; nothing to stop"
  fi
  local data=${CKPT_TEST_AZURE_DATA:-}
  if [ -n "$data" ] && [ -f "$data/azurite.log" ]; then rm -rf "$data"; fi
  echo "unset CKPT_TEST_AZURE_CONNECTION_STRING CKPT_TEST_AZURE_PID CKPT_TEST_AZURE_DATA"
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

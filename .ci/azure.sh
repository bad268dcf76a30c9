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
NAME=azure.sh
DIR=$ROOT/.ci/azurite
BIN=$DIR/node_modules/.bin/azurite-blob
VERSION=3.37.0
ACCOUNT=devstoreaccount1
# Azurite's published development key (not a secret).
KEY='Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=='
. "$ROOT/.ci/lib.sh"

build() {
  [ -x "$BIN" ] && return 0
  need npm "apt-get install nodejs npm"
  log "installing Azurite $VERSION into $DIR (about 3 minutes cold)"
  mkdir -p "$DIR"
  npm install --no-audit --no-fund --loglevel=error --prefix "$DIR" "azurite@$VERSION" >&2
}

start() {
  need curl
  build
  local port data
  port=$(free_port "${CKPT_AZURE_PORT:-10000}")
  data=$(mktemp -d "${TMPDIR:-/tmp}/ckpt-azure.XXXXXX")
  # No telemetry (the tests reach nothing but 127.0.0.1); in-memory blobs; any API version the
  # SDK sends. Detached from our stdout: $(...) in the caller waits for every writer to exit.
  (cd "$data" && exec "$BIN" --blobHost 127.0.0.1 --blobPort "$port" --inMemoryPersistence --disableTelemetry \
    --skipApiVersionCheck --silent) </dev/null >"$data/azurite.log" 2>&1 &
  local pid=$!
  wait_http "$pid" "$data/azurite.log" "http://127.0.0.1:$port/$ACCOUNT?comp=list" any 1200 "Azurite on port $port"
  log "Azurite pid $pid ready on http://127.0.0.1:$port/$ACCOUNT (data $data)"
  local cs="DefaultEndpointsProtocol=http;AccountName=$ACCOUNT;AccountKey=$KEY;BlobEndpoint=http://127.0.0.1:$port/$ACCOUNT;"
  echo "export CKPT_TEST_AZURE_CONNECTION_STRING='$cs' CKPT_TEST_AZURE_PID=$pid CKPT_TEST_AZURE_DATA=$data"
}

stop() {
  local pid=${1:-${CKPT_TEST_AZURE_PID:-}}
  if [ -z "$pid" ]; then log "stop: no pid (set CKPT_TEST_AZURE_PID, e.g. via eval \"\$(.ci/azure.sh start)\", or pass it)"; exit 1; fi
  # Azurite is a node process running azurite-blob.
  stop_pid "$pid" azurite-blob Azurite
  local data=${CKPT_TEST_AZURE_DATA:-}
  if [ -n "$data" ] && [ -f "$data/azurite.log" ]; then rm -rf "$data"; fi
  echo "unset CKPT_TEST_AZURE_CONNECTION_STRING CKPT_TEST_AZURE_PID CKPT_TEST_AZURE_DATA"
}

main "$@"

#!/usr/bin/env bash
# HDFS for tests: a one-DataNode MiniDFSCluster (Hadoop 3.4.2 from Maven Central, Java 17) on
# 127.0.0.1 with WebHDFS, started by .ci/hdfs/MiniHdfs.java on free ports. ckpt talks WebHDFS
# to it (CKPT_WEBHDFS_ENDPOINT for hdfs:// locations).
#
#   eval "$(.ci/hdfs.sh start)"   # fetches the jars and compiles if needed, starts it, prints exports
#   go test ./...                 # tests read CKPT_TEST_WEBHDFS_ENDPOINT and make their own directories
#   .ci/hdfs.sh stop              # stops the cluster started above (uses CKPT_TEST_HDFS_PID)
#   .ci/hdfs.sh run CMD ARGS...   # start, run CMD with the exports, stop; exit with CMD's status
#
# Start-up takes about 30 s on 2 busy cores. Only the exports go to stdout; progress and
# errors go to stderr.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
DIR=$ROOT/.ci/hdfs

log() { echo "hdfs.sh: $*" >&2; }

build() {
  [ -f "$DIR/classes/MiniHdfs.class" ] && [ -d "$DIR/lib" ] && return 0
  command -v mvn >/dev/null || { log "mvn is required (apt-get install maven)"; exit 1; }
  command -v javac >/dev/null || { log "javac is required (apt-get install openjdk-17-jdk-headless)"; exit 1; }
  log "fetching Hadoop 3.4.2 jars into $DIR/lib (about 1.5 minutes cold) and compiling MiniHdfs"
  (cd "$DIR" && mvn -B -q dependency:copy-dependencies -DoutputDirectory=lib -DincludeScope=runtime >&2)
  mkdir -p "$DIR/classes"
  javac -cp "$DIR/lib/*" -d "$DIR/classes" "$DIR/MiniHdfs.java" >&2
}

start() {
  command -v curl >/dev/null || { log "curl is required"; exit 1; }
  build
  local data
  data=$(mktemp -d "${TMPDIR:-/tmp}/ckpt-hdfs.XXXXXX")
  # C1 only: a short-lived test cluster starts faster without the optimizing compiler. Java 17
  # needs java.lang opened for Jersey's JAXB (WebHDFS answers 500 without it).
  # Detached from our stdout: $(...) in the caller waits for every writer to exit.
  java -Xmx512m -XX:TieredStopAtLevel=1 --add-opens java.base/java.lang=ALL-UNNAMED \
    -Dckpt.minihdfs=1 -cp "$DIR/classes:$DIR/lib/*" MiniHdfs "$data/dfs" </dev/null >"$data/hdfs.log" 2>&1 &
  local pid=$!
  local ready=""
  for _ in $(seq 600); do
    if ! kill -0 "$pid" 2>/dev/null; then
      log "MiniHdfs exited during start-up; log:"; tail -50 "$data/hdfs.log" >&2; exit 1
    fi
    ready=$(grep -m1 '^READY ' "$data/hdfs.log" || true)
    [ -n "$ready" ] && break
    sleep 0.2
  done
  if [ -z "$ready" ]; then
    log "MiniHdfs not ready after 2 minutes; log in $data/hdfs.log"
    kill "$pid" 2>/dev/null || true
    exit 1
  fi
  local http rpc
  read -r _ http rpc <<<"$ready"
  local code
  code=$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$http/webhdfs/v1/?op=GETFILESTATUS&user.name=ckpt" || true)
  if [ "$code" != 200 ]; then
    log "WebHDFS on port $http answers HTTP $code; log in $data/hdfs.log"
    kill "$pid" 2>/dev/null || true
    exit 1
  fi
  log "MiniHdfs pid $pid ready: WebHDFS http://127.0.0.1:$http, RPC hdfs://127.0.0.1:$rpc (data $data)"
  echo "export CKPT_TEST_WEBHDFS_ENDPOINT=http://127.0.0.1:$http CKPT_TEST_HDFS_NAMENODE=hdfs://127.0.0.1:$rpc CKPT_TEST_HDFS_PID=$pid CKPT_TEST_HDFS_DATA=$data"
}

stop() {
  local pid=${1:-${CKPT_TEST_HDFS_PID:-}}
  if [ -z "$pid" ]; then log "stop: no pid (set CKPT_TEST_HDFS_PID, e.g. via eval \"\$(.ci/hdfs.sh start)\", or pass it)"; exit 1; fi
  # Only ever kill our own cluster, even if the pid was recycled.
  if ps -p "$pid" -o args= 2>/dev/null | grep -q -- '-Dckpt.minihdfs=1'; then
    kill "$pid"
    for _ in $(seq 200); do kill -0 "$pid" 2>/dev/null || break; sleep 0.05; done
    log "stopped MiniHdfs pid $pid"
  else
    log "pid $pid is not a running MiniHdfs; nothing to stop"
  fi
  local data=${CKPT_TEST_HDFS_DATA:-}
  if [ -n "$data" ] && [ -f "$data/hdfs.log" ]; then rm -rf "$data"; fi
  echo "unset CKPT_TEST_WEBHDFS_ENDPOINT CKPT_TEST_HDFS_NAMENODE CKPT_TEST_HDFS_PID CKPT_TEST_HDFS_DATA"
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

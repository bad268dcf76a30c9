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
NAME=hdfs.sh
DIR=$ROOT/.ci/hdfs
. "$ROOT/.ci/lib.sh"

build() {
  [ -f "$DIR/classes/MiniHdfs.class" ] && [ -d "$DIR/lib" ] && return 0
  need mvn "apt-get install maven"
  need javac "apt-get install openjdk-17-jdk-headless"
  log "fetching Hadoop 3.4.2 jars into $DIR/lib (about 1.5 minutes cold) and compiling MiniHdfs"
  (cd "$DIR" && mvn -B -q dependency:copy-dependencies -DoutputDirectory=lib -DincludeScope=runtime >&2)
  mkdir -p "$DIR/classes"
  javac -cp "$DIR/lib/*" -d "$DIR/classes" "$DIR/MiniHdfs.java" >&2
}

start() {
  need curl
  build
  local data
  data=$(mktemp -d "${TMPDIR:-/tmp}/ckpt-hdfs.XXXXXX")
  # C1 only: a short-lived test cluster starts faster without the optimizing compiler. Java 17
  # needs java.lang opened for Jersey's JAXB (WebHDFS answers 500 without it).
  # Detached from our stdout: $(...) in the caller waits for every writer to exit.
  java -Xmx512m -XX:TieredStopAtLevel=1 --add-opens java.base/java.lang=ALL-UNNAMED \
    -Dckpt.minihdfs=1 -cp "$DIR/classes:$DIR/lib/*" MiniHdfs "$data/dfs" </dev/null >"$data/hdfs.log" 2>&1 &
  local pid=$!
  # MiniHdfs picks free ports and prints "READY <http> <rpc>" once both answer.
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
  wait_http "$pid" "$data/hdfs.log" "http://127.0.0.1:$http/webhdfs/v1/?op=GETFILESTATUS&user.name=ckpt" 200 1 "WebHDFS on port $http"
  log "MiniHdfs pid $pid ready: WebHDFS http://127.0.0.1:$http, RPC hdfs://127.0.0.1:$rpc (data $data)"
  echo "export CKPT_TEST_WEBHDFS_ENDPOINT=http://127.0.0.1:$http CKPT_TEST_HDFS_NAMENODE=hdfs://127.0.0.1:$rpc CKPT_TEST_HDFS_PID=$pid CKPT_TEST_HDFS_DATA=$data"
}

stop() {
  local pid=${1:-${CKPT_TEST_HDFS_PID:-}}
  if [ -z "$pid" ]; then log "stop: no pid (set CKPT_TEST_HDFS_PID, e.g. via eval \"\$(.ci/hdfs.sh start)\", or pass it)"; exit 1; fi
  stop_pid "$pid" -Dckpt.minihdfs=1 MiniHdfs
  local data=${CKPT_TEST_HDFS_DATA:-}
  if [ -n "$data" ] && [ -f "$data/hdfs.log" ]; then rm -rf "$data"; fi
  echo "unset CKPT_TEST_WEBHDFS_ENDPOINT CKPT_TEST_HDFS_NAMENODE CKPT_TEST_HDFS_PID CKPT_TEST_HDFS_DATA"
}

main "$@"

# Shared by the test-server scripts (.ci/s3.sh, gcs.sh, azure.sh, hdfs.sh): free ports, readiness
# polls, stopping only our own server, and the start | stop | build | run dispatch. A script sets
# NAME (for messages), defines build, start and stop_vars, then calls `main "$@"`.
# Only exports go to stdout; progress and errors go to stderr.

log() { echo "$NAME: $*" >&2; }

port_busy() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

# free_port BASE: BASE or the next port that nothing listens on.
free_port() {
  local port=$1 tries=0
  while port_busy "$port"; do
    tries=$((tries + 1))
    [ "$tries" -lt 100 ] || { log "no free port from $1"; exit 1; }
    port=$((port + 1))
  done
  echo "$port"
}

# wait_http PID LOG URL WANT TRIES WHAT: polls URL every 50 ms until it answers HTTP WANT ("any":
# any answer at all), failing with the server's log if PID dies or TRIES polls pass.
wait_http() {
  local pid=$1 logf=$2 url=$3 want=$4 tries=$5 what=$6 code=000
  for _ in $(seq "$tries"); do
    if ! kill -0 "$pid" 2>/dev/null; then
      log "$what exited during start-up; log:"; tail -50 "$logf" >&2; exit 1
    fi
    code=$(curl -s -o /dev/null -w '%{http_code}' "$url" || true)
    if [ "$want" = any ]; then [ "$code" != 000 ] && return 0; else [ "$code" = "$want" ] && return 0; fi
    sleep 0.05
  done
  log "$what not ready after $((tries / 20)) s (last HTTP status $code from $url); log in $logf"
  kill "$pid" 2>/dev/null || true
  exit 1
}

# stop_pid PID PATTERN WHAT: kills PID only if its command line matches PATTERN, so a recycled
# pid is never someone else's process.
stop_pid() {
  local pid=$1 pattern=$2 what=$3
  if ps -p "$pid" -o args= 2>/dev/null | grep -q -- "$pattern"; then
    kill "$pid"
    for _ in $(seq 200); do kill -0 "$pid" 2>/dev/null || break; sleep 0.05; done
    log "stopped $what pid $pid"
  else
    log "pid $pid is not a running $what; nothing to stop"
  fi
}

need() { command -v "$1" >/dev/null || { log "$1 is required${2:+ ($2)}"; exit 1; }; }

run() {
  [ $# -gt 0 ] || { log "run: missing command"; exit 2; }
  eval "$(start)"
  trap 'stop >/dev/null' EXIT
  local rc=0
  "$@" || rc=$?
  exit "$rc"
}

main() {
  case "${1:-}" in
    start) start ;;
    stop) shift; stop "$@" ;;
    build) build ;;
    run) shift; run "$@" ;;
    *) echo "usage: $0 start | stop [pid] | build | run CMD [ARGS...]" >&2; exit 2 ;;
  esac
}

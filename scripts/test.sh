#!/usr/bin/env bash
# The whole test suite: format, vet, staticcheck, race-enabled tests, and a short fuzz pass over
# every parser. The object store tests run against real servers and emulators: versitygw (S3),
# fake-gcs-server (GCS), Azurite (Azure) and an HDFS mini-cluster, which this script installs on
# first use and starts unless CKPT_TEST_S3_ENDPOINT / CKPT_TEST_GCS_ENDPOINT /
# CKPT_TEST_AZURE_CONNECTION_STRING / CKPT_TEST_WEBHDFS_ENDPOINT already point at one, each on a
# free port. Needs Go (go.mod's version), bash, git, curl, npm (Azurite) and Java 17 with Maven
# (HDFS, Spark); scripts/tools.sh checks them first and installs staticcheck itself.
set -euo pipefail
cd "$(dirname "$0")/.."
export GOTOOLCHAIN=local
export PATH="$PWD/.ci/bin:$(go env GOPATH)/bin:$PATH"

# Tools beyond Go (staticcheck is installed into .ci/bin on the first run), before anything slow.
# Every stage prints a banner with its start time and a line with its time when it ends; the run
# ends with a summary (scripts/testsum, internal/testsum): each stage's time, the tests passed,
# failed and skipped, the live Spark cases per release, what failed, and last a plain line
# `N passed, N failed, N skipped` that CI reads. A stage that fails counts as one failure.
sumdir=$(mktemp -d)
stage_n=0 stage_name='' stage_t0=0
stage() {
  stage_n=$((stage_n + 1)) stage_name=$1 stage_t0=$(date +%s)
  echo "==> [$stage_n] $stage_name ($(date -u +%H:%M:%S) UTC)"
}
stage_file() { printf '%s/%02d.json' "$sumdir" "$stage_n"; }
# end_stage records a stage that runs no Go tests; passed counts its checks (fuzz targets).
end_stage() {
  local secs=$(( $(date +%s) - stage_t0 ))
  testsum stage -name "$stage_name" -seconds "$secs" -passed "${1:-0}" -out "$(stage_file)"
  echo "<== $stage_name: ${secs}s"
  stage_name=''
}
# go_stage pipes `go test -json` through testsum: a line per package, the output of failures.
go_stage() {
  local rc=0
  "$@" 2>&1 | tee -a "$sumdir/go-test.jsonl" | testsum run -stage "$stage_name" -out "$(stage_file)" || rc=$?
  echo "<== $stage_name: $(( $(date +%s) - stage_t0 ))s"
  stage_name=''
  return $rc
}

# Each emulator this script starts is stopped on exit, whatever happens; then the summary.
stops=()
cleanup() {
  local rc=$?
  for s in "${stops[@]}"; do bash ".ci/$s.sh" stop >/dev/null 2>&1 || true; done
  if [ -n "$stage_name" ] && [ ! -e "$(stage_file)" ]; then
    testsum stage -name "$stage_name" -seconds $(( $(date +%s) - stage_t0 )) -failed -out "$(stage_file)" || true
  fi
  if compgen -G "$sumdir/*.json" >/dev/null; then
    if ! testsum report "$sumdir"/*.json && [ "$rc" = 0 ]; then rc=1; fi
  fi
  if [ "$rc" != 0 ] && [ -s "$sumdir/go-test.jsonl" ]; then echo "the go test -json output: $sumdir/go-test.jsonl"; fi
  exit "$rc"
}
trap cleanup EXIT

stage "tools (staticcheck into .ci/bin on the first run)"
bash scripts/tools.sh
go build -o .ci/bin/testsum ./scripts/testsum
end_stage

# The first run builds versitygw, fake-gcs-server, Azurite and the HDFS mini-cluster from source
# (the slow part of a cold run); later runs only start them.
stage "store servers (S3, GCS, Azure, HDFS)"
if [ -z "${CKPT_TEST_S3_ENDPOINT:-}" ]; then
  eval "$(bash .ci/s3.sh start)"; stops+=(s3)
fi
if [ -z "${CKPT_TEST_GCS_ENDPOINT:-}" ]; then
  eval "$(bash .ci/gcs.sh start)"; stops+=(gcs)
fi
if [ -z "${CKPT_TEST_AZURE_CONNECTION_STRING:-}" ]; then
  eval "$(bash .ci/azure.sh start)"; stops+=(azure)
fi
if [ -z "${CKPT_TEST_WEBHDFS_ENDPOINT:-}" ]; then
  eval "$(bash .ci/hdfs.sh start)"; stops+=(hdfs)
fi
end_stage

stage "gofmt, go vet, staticcheck"
unformatted=$(gofmt -l $(git ls-files '*.go' 2>/dev/null || find . -name '*.go' -not -path './.ci/*'))
if [ -n "$unformatted" ]; then
  echo "gofmt needed on:"; echo "$unformatted"; exit 1
fi
go vet ./...
staticcheck ./...
end_stage

# The live Spark suite runs on its own below (one JVM per release, not under -race).
stage "go test -race"
go_stage go test -json -race -count=1 -timeout 20m -skip '^TestSparkLive(StateWriter|StateDamage|Repartition|Edit|SSTWriter|RocksDBWriter|ChangelogWriter|AggregationHandOver|DedupHandOver|AggregationCrash|WindowHandOver|RocksDBEngineHandOver|Migrate)?$' ./...

# Real Spark restarts the scenario cases, one JVM per release (CKPT_SPARK_VERSIONS, default every
# pinned release; installed by scripts/spark.sh, which .ci/run calls). Without Spark installed the
# test skips, except in CI where it fails. The generated cases: scripts/spark-suite.sh.
# The same JVMs then run the small set of repair cases (internal/sparkoracle/repair_test.go,
# CKPT_SPARK_REPAIRS=small); TestRepairGoldens, in the Go suite, checks ckpt against every stored
# repair golden, and scripts/spark-suite.sh runs the whole matrix live. The SST and RocksDB
# writers' and the stateful hand-over's live tests run on the oldest and the newest
# release here (CKPT_SPARK_LIVE=ci); spark-suite.sh runs them on every release.
# The releases are installed here too (cached: nearly free when .ci/run or an earlier run did it),
# so that this command alone runs the live suite rather than skipping it.
stage "Spark releases (~/.cache/ckpt-spark)"
bash scripts/spark.sh install
end_stage
stage "live Spark suite"
CKPT_SPARK_CASES=scenarios CKPT_SPARK_REPAIRS=small CKPT_SPARK_REPARTITION=ci CKPT_SPARK_EDIT=ci CKPT_SPARK_MIGRATE=ci CKPT_SPARK_LIVE=ci go_stage go test -json -count=1 -timeout 60m -run '^TestSparkLive(StateWriter|StateDamage|Repartition|Edit|SSTWriter|RocksDBWriter|ChangelogWriter|AggregationHandOver|DedupHandOver|AggregationCrash|WindowHandOver|RocksDBEngineHandOver|Migrate)?$' ./internal/sparkoracle

# Fuzz every parser briefly: every Fuzz target of every package (FUZZTIME each, default 5s, 3s
# when there are more than 10 targets); any crash fails the run. A crash leaves its input in
# the package's testdata/fuzz. Go 1.26's fuzzer can also stop with "context deadline exceeded"
# and no input (golang/go#75804): that alone is retried once, a real crasher never is.
# Packages are those `go list` names whose test files declare a Fuzz function (so that
# `go test -list` compiles only them); `go test -list` names the targets.
stage "fuzz"
targets=()
while read -r pkg dir; do
  grep -qs '^func Fuzz' "$dir"/*_test.go || continue
  for f in $(go test -list '^Fuzz' "$pkg" | grep '^Fuzz'); do
    targets+=("$pkg $dir $f")
  done
done < <(go list -f '{{if or .TestGoFiles .XTestGoFiles}}{{.ImportPath}} {{.Dir}}{{end}}' ./...)
if [ ${#targets[@]} -eq 0 ]; then
  echo "fuzz: no Fuzz targets found"; exit 1
fi
default_fuzztime=5s
if [ ${#targets[@]} -gt 10 ]; then default_fuzztime=3s; fi
FUZZTIME=${FUZZTIME:-$default_fuzztime}
echo "fuzz: ${#targets[@]} targets, $FUZZTIME each"
for t in "${targets[@]}"; do
  read -r pkg dir f <<<"$t"
  corpus=$dir/testdata/fuzz
  before=$( (find "$corpus" -type f 2>/dev/null || true) | sort | md5sum)
  if ! go test -run '^$' -fuzz "^${f}\$" -fuzztime "$FUZZTIME" "$pkg"; then
    after=$( (find "$corpus" -type f 2>/dev/null || true) | sort | md5sum)
    if [ "$before" != "$after" ]; then
      echo "fuzz: $pkg $f found a failing input (see $corpus/$f)"; exit 1
    fi
    echo "fuzz: $pkg $f stopped without a failing input; retrying once"
    go test -run '^$' -fuzz "^${f}\$" -fuzztime "$FUZZTIME" "$pkg"
  fi
done
end_stage "${#targets[@]}"

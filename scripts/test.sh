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
bash scripts/tools.sh

# Each emulator this script starts is stopped on exit, whatever happens.
stops=()
cleanup() { for s in "${stops[@]}"; do bash ".ci/$s.sh" stop >/dev/null 2>&1 || true; done; }
trap cleanup EXIT
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

unformatted=$(gofmt -l $(git ls-files '*.go' 2>/dev/null || find . -name '*.go' -not -path './.ci/*'))
if [ -n "$unformatted" ]; then
  echo "gofmt needed on:"; echo "$unformatted"; exit 1
fi
go vet ./...
staticcheck ./...

# The live Spark suite runs on its own below (one JVM per release, not under -race).
go test -race -count=1 -timeout 20m -skip '^TestSparkLive$' ./...

# Real Spark restarts the scenario cases, one JVM per release (CKPT_SPARK_VERSIONS, default every
# pinned release; installed by scripts/spark.sh, which .ci/run calls). Without Spark installed the
# test skips, except in CI where it fails. The generated cases: scripts/spark-suite.sh.
# The same JVMs then run the small set of repair cases (internal/sparkoracle/repair_test.go,
# CKPT_SPARK_REPAIRS=small); TestRepairGoldens, in the Go suite, checks ckpt against every stored
# repair golden, and scripts/spark-suite.sh runs the whole matrix live.
# The releases are installed here too (cached: nearly free when .ci/run or an earlier run did it),
# so that this command alone runs the live suite rather than skipping it.
bash scripts/spark.sh install
spark_start=$(date +%s)
spark_log=$(mktemp)
if ! CKPT_SPARK_CASES=scenarios CKPT_SPARK_REPAIRS=small go test -count=1 -timeout 60m -v -run '^TestSparkLive$' ./internal/sparkoracle >"$spark_log" 2>&1; then
  grep -v '^=== RUN' "$spark_log" | tail -200; exit 1
fi
grep -v '^=== RUN' "$spark_log"; rm -f "$spark_log"
echo "spark live suite: $(( $(date +%s) - spark_start ))s"

# Fuzz every parser briefly: every Fuzz target of every package (FUZZTIME each, default 5s, 3s
# when there are more than 10 targets); any crash fails the run. A crash leaves its input in
# the package's testdata/fuzz. Go 1.26's fuzzer can also stop with "context deadline exceeded"
# and no input (golang/go#75804): that alone is retried once, a real crasher never is.
# Packages are those `go list` names whose test files declare a Fuzz function (so that
# `go test -list` compiles only them); `go test -list` names the targets.
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


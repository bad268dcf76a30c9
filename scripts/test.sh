#!/usr/bin/env bash
# The whole test suite: format, vet, staticcheck, race-enabled tests, and a short fuzz pass over
# every parser. The object store tests run against real servers and emulators: versitygw (S3),
# fake-gcs-server (GCS), Azurite (Azure) and an HDFS mini-cluster, which this script installs on
# first use and starts unless CKPT_TEST_S3_ENDPOINT / CKPT_TEST_GCS_ENDPOINT /
# CKPT_TEST_AZURE_CONNECTION_STRING / CKPT_TEST_WEBHDFS_ENDPOINT already point at one.
set -euo pipefail
cd "$(dirname "$0")/.."
export GOTOOLCHAIN=local
export PATH="$PWD/.ci/bin:$(go env GOPATH)/bin:$PATH"

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
if command -v staticcheck >/dev/null; then staticcheck ./...; else echo "staticcheck not installed: run .ci/run or go install honnef.co/go/tools/cmd/staticcheck@v0.8.2"; exit 1; fi

go test -race -count=1 -timeout 20m ./...

# Fuzz every parser briefly (FUZZTIME, default 5s each); any crash fails the run. A crash leaves
# its input in testdata/fuzz. Go 1.26's fuzzer can also stop with "context deadline exceeded"
# and no input (golang/go#75804): that alone is retried once, a real crasher never is.
FUZZTIME=${FUZZTIME:-5s}
for pkg in ./internal/logformat/ ./internal/storage/; do
corpus=${pkg#./}testdata/fuzz
for f in $(go test -list '^Fuzz' "$pkg" | grep '^Fuzz'); do
  before=$(find "$corpus" -type f 2>/dev/null | sort | md5sum)
  if ! go test -run '^$' -fuzz "^${f}\$" -fuzztime "$FUZZTIME" "$pkg"; then
    after=$(find "$corpus" -type f 2>/dev/null | sort | md5sum)
    if [ "$before" != "$after" ]; then
      echo "fuzz: $f found a failing input (see $corpus/$f)"; exit 1
    fi
    echo "fuzz: $f stopped without a failing input; retrying once"
    go test -run '^$' -fuzz "^${f}\$" -fuzztime "$FUZZTIME" "$pkg"
  fi
done
done

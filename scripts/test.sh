#!/usr/bin/env bash
# The whole test suite: format, vet, staticcheck, race-enabled tests, and a short fuzz pass over
# every parser. The S3 tests run against a real S3-compatible server (versitygw), which this
# script builds on first use and starts unless CKPT_TEST_S3_ENDPOINT already points at one.
set -euo pipefail
cd "$(dirname "$0")/.."
export GOTOOLCHAIN=local
export PATH="$PWD/.ci/bin:$(go env GOPATH)/bin:$PATH"

if [ -z "${CKPT_TEST_S3_ENDPOINT:-}" ]; then
  eval "$(bash .ci/s3.sh start)"
  trap 'bash .ci/s3.sh stop >/dev/null 2>&1 || true' EXIT
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
for pkg in $(grep -rl --include='*_test.go' '^func Fuzz' internal | xargs -n1 dirname | sort -u); do
  corpus=$pkg/testdata/fuzz
  for f in $(go test -list '^Fuzz' "./$pkg/" | grep '^Fuzz'); do
    before=$(find "$corpus" -type f 2>/dev/null | sort | md5sum)
    if ! go test -run '^$' -fuzz "^${f}\$" -fuzztime "$FUZZTIME" "./$pkg/"; then
      after=$(find "$corpus" -type f 2>/dev/null | sort | md5sum)
      if [ "$before" != "$after" ]; then
        echo "fuzz: $f found a failing input (see $corpus/$f)"; exit 1
      fi
      echo "fuzz: $f stopped without a failing input; retrying once"
      go test -run '^$' -fuzz "^${f}\$" -fuzztime "$FUZZTIME" "./$pkg/"
    fi
  done
done

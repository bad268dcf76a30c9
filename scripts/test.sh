#!/usr/bin/env bash
# The whole test suite: format, vet, staticcheck, race-enabled tests, and a short fuzz pass over
# every parser. The S3 tests run against a real S3-compatible server (versitygw), which this
# script builds on first use and starts on a free port unless CKPT_TEST_S3_ENDPOINT already points
# at one. Needs Go (go.mod's version), bash, git and curl; staticcheck installs itself.
set -euo pipefail
cd "$(dirname "$0")/.."
export GOTOOLCHAIN=local
export PATH="$PWD/.ci/bin:$(go env GOPATH)/bin:$PATH"

# Tools beyond Go (staticcheck is installed into .ci/bin on the first run), before anything slow.
bash scripts/tools.sh

if [ -z "${CKPT_TEST_S3_ENDPOINT:-}" ]; then
  eval "$(bash .ci/s3.sh start)"
  trap 'bash .ci/s3.sh stop >/dev/null 2>&1 || true' EXIT
fi

unformatted=$(gofmt -l $(git ls-files '*.go' 2>/dev/null || find . -name '*.go' -not -path './.ci/*'))
if [ -n "$unformatted" ]; then
  echo "gofmt needed on:"; echo "$unformatted"; exit 1
fi
go vet ./...
staticcheck ./...

go test -race -count=1 -timeout 20m ./...

# Fuzz every parser briefly (FUZZTIME, default 5s each); any crash fails the run. A crash leaves
# its input in testdata/fuzz. Go 1.26's fuzzer can also stop with "context deadline exceeded"
# and no input (golang/go#75804): that alone is retried once, a real crasher never is.
FUZZTIME=${FUZZTIME:-5s}
corpus=internal/logformat/testdata/fuzz
for f in $(go test -list '^Fuzz' ./internal/logformat/ | grep '^Fuzz'); do
  before=$(find "$corpus" -type f 2>/dev/null | sort | md5sum)
  if ! go test -run '^$' -fuzz "^${f}\$" -fuzztime "$FUZZTIME" ./internal/logformat/; then
    after=$(find "$corpus" -type f 2>/dev/null | sort | md5sum)
    if [ "$before" != "$after" ]; then
      echo "fuzz: $f found a failing input (see $corpus/$f)"; exit 1
    fi
    echo "fuzz: $f stopped without a failing input; retrying once"
    go test -run '^$' -fuzz "^${f}\$" -fuzztime "$FUZZTIME" ./internal/logformat/
  fi
done

# The file sink log's path resolution (sinklog: verify, repair and cp resolve logged paths with it).
for f in $(go test -list '^Fuzz' ./internal/sinklog/ | grep '^Fuzz'); do
  go test -run '^$' -fuzz "^${f}\$" -fuzztime "$FUZZTIME" ./internal/sinklog/ ||
    go test -run '^$' -fuzz "^${f}\$" -fuzztime "$FUZZTIME" ./internal/sinklog/
done

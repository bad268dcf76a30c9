#!/usr/bin/env bash
# The Spark oracle suite alone: every case (scenarios and the generated checkpoints) restarted by
# real Spark, checked against the goldens, then the goldens against `ckpt replay`; and the repair
# cases (the whole matrix on 3.5.7, CKPT_SPARK_REPAIRS=all for every release).
#
#   scripts/spark-suite.sh                # every pinned release (or $CKPT_SPARK_VERSIONS)
#   scripts/spark-suite.sh 3.5            # one release
#   scripts/spark-suite.sh --update 4.0   # rewrite that release's goldens from Spark's answers
#   CKPT_SPARK_CASES=scenarios scripts/spark-suite.sh   # only the scenario cases (what CI runs)
#
# Installs the releases first (cached, see scripts/spark.sh). After --update, refresh the list of
# known divergences with: UPDATE_DIVERGENCES=1 go test ./internal/sparkoracle -run TestGoldens
set -euo pipefail
cd "$(dirname "$0")/.."
export GOTOOLCHAIN=local
update=0
if [ "${1:-}" = "--update" ]; then update=1; shift; fi
if [ $# -gt 0 ]; then export CKPT_SPARK_VERSIONS="$*"; fi
bash scripts/spark.sh install ${CKPT_SPARK_VERSIONS:-}
export CKPT_SPARK_CASES=${CKPT_SPARK_CASES:-all}
if [ $update = 1 ]; then export UPDATE_SPARK=1; fi
go test -count=1 -timeout 180m -v -run '^TestSparkLive$' ./internal/sparkoracle | grep -v '^=== RUN'
go test -count=1 -timeout 60m -v -run '^TestSparkLiveRepartition$' ./internal/sparkoracle | grep -v '^=== RUN'
go test -count=1 -timeout 60m -v -run '^TestSparkLiveEdit$' ./internal/sparkoracle | grep -v '^=== RUN'
go test -count=1 -timeout 60m -v -run '^TestSparkLiveMigrate$' ./internal/sparkoracle | grep -v '^=== RUN'
go test -count=1 -timeout 90m -v -run '^TestSparkLive(SSTWriter|RocksDBWriter|ChangelogWriter|AggregationHandOver|DedupHandOver|AggregationCrash|WindowHandOver|RocksDBEngineHandOver)$' ./internal/sparkoracle | grep -v '^=== RUN'
go test -count=1 -run '^(TestGoldens|TestRepairGoldens|TestCompatibilityDoc)$' ./internal/sparkoracle

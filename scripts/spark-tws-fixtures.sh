#!/usr/bin/env bash
# Writes the transformWithState fixtures testdata/spark-state/<release>/tws-*/ with real Spark:
# scripts/spark-tws-fixtures/TwsFixture.java compiled against the jars of a pyspark venv (the
# release is that pyspark's), run on OpenJDK 17, one case per JVM.
#
#   scripts/spark-tws-fixtures.sh VENV OUTDIR [CASE...]    (cases: tws tws-changelog tws-changelog-v2 tws-ttl)
#   e.g. scripts/spark-tws-fixtures.sh /tmp/venv-state-41 testdata/spark-state
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
venv=$1 out=$2; shift 2
cases=("$@"); [ ${#cases[@]} -gt 0 ] || cases=(tws tws-changelog)
jars=$(echo "$venv"/lib/python3*/site-packages/pyspark/jars)
[ -d "$jars" ] || { echo "no pyspark jars under $venv" >&2; exit 1; }
classes=$(mktemp -d /tmp/tws-classes.XXXXXX)
trap 'rm -rf "$classes"' EXIT
javac -nowarn -d "$classes" -cp "$jars/*" "$here/spark-tws-fixtures/TwsFixture.java"
# The module openings Spark's launcher passes on Java 17 (JavaModuleOptions).
opens=()
for p in java.lang java.lang.invoke java.lang.reflect java.io java.net java.nio java.util java.util.concurrent \
  java.util.concurrent.atomic sun.nio.ch sun.nio.cs sun.security.action sun.util.calendar; do
  opens+=("--add-opens=java.base/$p=ALL-UNNAMED")
done
for c in "${cases[@]}"; do
  echo "case $c" >&2
  java -Xmx1g -XX:+UseSerialGC "${opens[@]}" -Djdk.reflect.useDirectMethodHandle=false \
    -Dio.netty.tryReflectionSetAccessible=true -cp "$classes:$jars/*" TwsFixture "$out" "$c"
done

#!/usr/bin/env bash
# Installs pinned Apache Spark releases (spark-sql + spark-sql-kafka-0-10 and their dependencies)
# from Maven Central into a cache that later runs reuse, and compiles the harness driver against them.
#
#   scripts/spark.sh install [VERSION...]   # default: $CKPT_SPARK_VERSIONS or every pinned release
#   scripts/spark.sh classpath VERSION      # print the classpath of an installed release
#   scripts/spark.sh versions               # print the pinned releases
#
# VERSION is a pinned release (3.5.8) or its line (3.5). Cache: ${CKPT_SPARK_CACHE:-$HOME/.cache/ckpt-spark}.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
CACHE=${CKPT_SPARK_CACHE:-$HOME/.cache/ckpt-spark}
# The newest patch releases whose whole dependency tree (Kafka connector and its token provider
# included) the Maven Central mirror of this network serves: 3.5.8+ lack spark-sql-kafka-0-10_2.12,
# 4.0.1-4.0.4, 4.1.0 and 4.1.2-4.1.3 lack spark-token-provider-kafka-0-10_2.13. 4.2.0 resolves
# whole (spark-token-provider-kafka-0-10_2.13 4.2.0, kafka-clients 3.9.2).
PINNED="3.5.7 4.0.0 4.1.1 4.2.0"

resolve() { # 3.5 -> 3.5.8; a full pinned version stays
  local v=$1 p
  for p in $PINNED; do
    if [ "$v" = "$p" ] || [ "${p%.*}" = "$v" ]; then echo "$p"; return; fi
  done
  echo "spark.sh: no pinned release for '$v' (pinned: $PINNED)" >&2; return 1
}

scala_of() { case $1 in 3.*) echo 2.12 ;; *) echo 2.13 ;; esac; }

install_one() {
  local v dir scala
  v=$(resolve "$1"); dir="$CACHE/$v"; scala=$(scala_of "$v")
  if [ -f "$dir/jars/.complete" ]; then
    echo "spark $v: cached in $dir" >&2
  else
    mkdir -p "$dir"
    rm -rf "$dir/jars" && mkdir -p "$dir/jars"
    cat >"$dir/pom.xml" <<POM
<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>dev.ckpt</groupId><artifactId>spark-oracle-$v</artifactId><version>1</version>
  <dependencies>
    <dependency><groupId>org.apache.spark</groupId><artifactId>spark-sql_$scala</artifactId><version>$v</version></dependency>
    <dependency><groupId>org.apache.spark</groupId><artifactId>spark-sql-kafka-0-10_$scala</artifactId><version>$v</version></dependency>
  </dependencies>
</project>
POM
    echo "spark $v: downloading spark-sql_$scala and spark-sql-kafka-0-10_$scala from Maven Central" >&2
    # Spark's POMs name extra repositories (a Maven Central mirror on GCS among them) that this
    # network may not reach: route every repository to Maven Central.
    cat >"$dir/settings.xml" <<XML
<settings><mirrors><mirror><id>central-only</id><mirrorOf>*</mirrorOf>
<url>${CKPT_MAVEN_CENTRAL:-https://repo.maven.apache.org/maven2}</url></mirror></mirrors></settings>
XML
    (cd "$dir" && mvn -q -B -s settings.xml dependency:copy-dependencies -DincludeScope=runtime -DoutputDirectory=jars)
    touch "$dir/jars/.complete"
  fi
  compile "$v"
}

# The driver is compiled per release (its API differs slightly); the classes are cached next to the
# jars and rebuilt when spark/Restart.java changes.
compile() {
  local v=$1 dir="$CACHE/$1" sum
  sum=$(sha256sum "$ROOT/spark/Restart.java" | cut -c1-16)
  if [ -f "$dir/classes/.src-$sum" ]; then return; fi
  rm -rf "$dir/classes" && mkdir -p "$dir/classes"
  javac -nowarn -d "$dir/classes" -cp "$dir/jars/*" "$ROOT/spark/Restart.java" >&2
  touch "$dir/classes/.src-$sum"
}

cmd=${1:-install}; shift || true
case $cmd in
  install)
    vs=("$@"); [ ${#vs[@]} -gt 0 ] || read -r -a vs <<<"${CKPT_SPARK_VERSIONS:-$PINNED}"
    for v in "${vs[@]}"; do install_one "$v"; done ;;
  classpath)
    v=$(resolve "$1"); [ -f "$CACHE/$v/jars/.complete" ] || { echo "spark $v not installed: run scripts/spark.sh install $v" >&2; exit 1; }
    compile "$v"; echo "$CACHE/$v/classes:$CACHE/$v/jars/*" ;;
  resolve) resolve "$1" ;;
  versions) echo "$PINNED" ;;
  *) echo "usage: scripts/spark.sh install [VERSION...] | classpath VERSION | versions" >&2; exit 2 ;;
esac

#!/usr/bin/env python3
"""Run Spark 4.2's offline state repartition on copies of Spark-written checkpoints and keep
what it did: testdata/spark-repartition/<release>/<case>/ (README.md there says how).

Usage: python repartition.py OUTDIR N SRC_CASE_DIR...
(run with the python of a venv holding pyspark 4.2+; SRC_CASE_DIR is a
testdata/spark-state/<release>/<case> directory whose checkpoint/ Spark wrote).

For each case: before/checkpoint is a copy of SRC/checkpoint as Spark left it; after/checkpoint
is another copy on which SparkSession.streamingCheckpointManager().repartition(path, N, True)
ran (classic session, enforceExactlyOnceSink=true). result.json records the batch id Spark
returned or its error (class, condition, message), and the files the call added, changed or
removed (by SHA-256). On success oracle/ holds Spark's statestore reader of both checkpoints
(every column, partition_id included), one JSON row per line, sorted.
"""
import hashlib
import json
import os
import shutil
import sys

import pyspark
from pyspark.sql import SparkSession

RELEASE = pyspark.__version__


def tree(root):
    out = {}
    for d, _, files in os.walk(root):
        for f in files:
            p = os.path.join(d, f)
            with open(p, "rb") as fh:
                out[os.path.relpath(p, root)] = hashlib.sha256(fh.read()).hexdigest()
    return out


def read_state(spark, ckpt, path):
    ops = sorted(n for n in os.listdir(os.path.join(ckpt, "state")) if n.isdigit())
    with open(path, "w") as f:
        for op in ops:
            df = spark.read.format("statestore").option("operatorId", int(op)).load(ckpt)
            for line in sorted(df.toJSON().collect()):
                f.write('{"operatorId":%s,"row":%s}\n' % (op, line))


def error_of(e):
    j = getattr(e, "java_exception", None) or getattr(e, "_origin", None)
    out = {"pythonClass": type(e).__name__, "message": str(e).splitlines()[0] if str(e) else ""}
    cond = getattr(e, "getCondition", None) or getattr(e, "getErrorClass", None)
    if cond:
        try:
            out["condition"] = cond()
        except Exception:
            pass
    if j is not None:
        try:
            out["javaClass"] = j.getClass().getName()
            out["javaMessage"] = j.getMessage()
        except Exception:
            pass
    return out


def run(spark, out, n, src):
    name = os.path.basename(os.path.normpath(src))
    base = os.path.join(out, name)
    shutil.rmtree(base, ignore_errors=True)
    before = os.path.join(base, "before", "checkpoint")
    after = os.path.join(base, "after", "checkpoint")
    shutil.copytree(os.path.join(src, "checkpoint"), before)
    shutil.copytree(os.path.join(src, "checkpoint"), after)
    t0 = tree(after)
    result = {"release": RELEASE, "source": os.path.relpath(src, os.path.dirname(os.path.dirname(out))),
              "call": "spark.streamingCheckpointManager().repartition(<after>/checkpoint, %d, true)" % n}
    try:
        mgr = spark._jsparkSession.streamingCheckpointManager()
        mgr.repartition(os.path.abspath(after), n, True)
        result["outcome"] = "ok"
    except Exception as e:
        result["outcome"] = "error"
        result["error"] = error_of(e)
    t1 = tree(after)
    result["added"] = sorted(set(t1) - set(t0))
    result["removed"] = sorted(set(t0) - set(t1))
    result["changed"] = sorted(p for p in t0 if p in t1 and t0[p] != t1[p])
    if result["outcome"] == "ok":
        os.makedirs(os.path.join(base, "oracle"))
        read_state(spark, os.path.abspath(before), os.path.join(base, "oracle", "before.jsonl"))
        read_state(spark, os.path.abspath(after), os.path.join(base, "oracle", "after.jsonl"))
    # Spark's messages name the checkpoint: keep them free of this machine's paths.
    text = json.dumps(result, indent=1, sort_keys=True)
    for p in ("file://" + os.path.abspath(after), "file:" + os.path.abspath(after), os.path.abspath(after)):
        text = text.replace(p, "<after>/checkpoint")
    with open(os.path.join(base, "result.json"), "w") as f:
        f.write(text)
        f.write("\n")
    print(name, result["outcome"], flush=True)


def main():
    out = os.path.join(sys.argv[1], RELEASE)
    n = int(sys.argv[2])
    spark = (SparkSession.builder.master("local[1]").appName("repartition")
             .config("spark.ui.enabled", "false")
             .config("spark.sql.session.timeZone", "UTC").getOrCreate())
    # The state reader asks the state store coordinator, which starts with the streaming
    # query manager.
    spark.streams.active
    try:
        for src in sys.argv[3:]:
            run(spark, out, n, src)
    finally:
        spark.stop()


if __name__ == "__main__":
    main()

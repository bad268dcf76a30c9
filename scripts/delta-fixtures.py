#!/usr/bin/env python3
"""Write the Delta Lake fixtures of testdata/delta/ with real Spark and delta-spark.

Usage: python delta-fixtures.py OUTDIR [CASE...]
(run with the python of a venv holding pyspark and delta-spark, e.g.
  python3 -m venv /tmp/venv-delta && /tmp/venv-delta/bin/pip install pyspark==3.5.8 delta-spark==3.3.2
  /tmp/venv-delta/bin/python scripts/delta-fixtures.py testdata/delta
delta-spark's jars come from Maven Central through spark.jars.packages on first use.)

Cases (each under OUTDIR/<case>/; absolute paths in the logs are rewritten to /fixture/<case>/):
  source    a Delta table (table/) read as a stream (readStream.format("delta")) into a Delta sink
            (sink/), checkpoint checkpoint/; three micro-batches with appends to the table between them,
            then one more append after the query stopped (the table is one version ahead).
  sink      a JSON file source into a Delta sink (writeStream.format("delta")); three batches: the
            sink's _delta_log holds txn actions with appId = the query id and version = the batch id.
            Then the last commits/N is deleted, so the checkpoint re-runs a batch the sink already has.
  replaced  `source`, then the table is deleted and written again at the same path (a new table id);
            the restart's error is Spark's own (error.txt).
  sink-checkpoint  a JSON file source into a Delta sink with checkpointInterval 2, three batches;
            the JSON commits up to the checkpoint are deleted, so the txn is read from its parquet.
  expired   `source` with delta.checkpointInterval=2, then more appends and a Delta checkpoint, then the
            JSON commits and checkpoints older than the newest checkpoint are deleted as log cleanup
            (delta.logRetentionDuration) would; the restart's error is Spark's own (error.txt).
Every case: local[1], spark.sql.shuffle.partitions=1, spark.databricks.delta.snapshotPartitions=1,
session time zone UTC.
"""
import json
import os
import re
import shutil
import sys
import time

import pyspark
from delta import configure_spark_with_delta_pip
from pyspark.sql import SparkSession

CASES = ["source", "sink", "replaced", "expired", "sink-checkpoint"]


def session():
    b = (SparkSession.builder.master("local[1]").appName("ckpt-delta-fixtures")
         .config("spark.sql.extensions", "io.delta.sql.DeltaSparkSessionExtension")
         .config("spark.sql.catalog.spark_catalog", "org.apache.spark.sql.delta.catalog.DeltaCatalog")
         .config("spark.sql.shuffle.partitions", "1")
         .config("spark.sql.session.timeZone", "UTC")
         .config("spark.ui.enabled", "false")
         .config("spark.databricks.delta.snapshotPartitions", "1")
         .config("spark.sql.streaming.noDataMicroBatches.enabled", "false")
         .config("spark.driver.memory", "512m"))
    s = configure_spark_with_delta_pip(b).getOrCreate()
    s.sparkContext.setLogLevel("ERROR")
    return s


def append(spark, table, start, n, props=None):
    df = spark.range(start, start + n).selectExpr("id", "concat('v', id) AS s")
    w = df.coalesce(1).write.format("delta").mode("append")
    w.save(table)
    if props:
        spark.sql("ALTER TABLE delta.`%s` SET TBLPROPERTIES (%s)" % (
            table, ", ".join("'%s' = '%s'" % kv for kv in props.items())))


def stream_delta_to_delta(spark, table, sink, ckpt, appends, start_id):
    """Start the stream, then for each append: write it and process it (one batch each)."""
    q = (spark.readStream.format("delta").load(table)
         .writeStream.format("delta").option("checkpointLocation", ckpt)
         .start(sink))
    q.processAllAvailable()
    nid = start_id
    for n in appends:
        append(spark, table, nid, n)
        nid += n
        q.processAllAvailable()
    q.stop()
    return nid


def restart_error(spark, table, sink, ckpt):
    """Restart the query on the checkpoint and return Spark's error text ('' when it runs)."""
    try:
        q = (spark.readStream.format("delta").load(table)
             .writeStream.format("delta").option("checkpointLocation", ckpt)
             .start(sink))
        q.processAllAvailable()
        q.stop()
        return ""
    except Exception as e:  # StreamingQueryException: keep Spark's message only
        msg = getattr(e, "desc", None) or str(e)
        return msg.split("\n=== Streaming Query ===")[0].strip() + "\n"


def case_source(spark, d, props=None):
    table, sink, ckpt = (os.path.join(d, x) for x in ("table", "sink", "checkpoint"))
    append(spark, table, 0, 3, props)
    nid = stream_delta_to_delta(spark, table, sink, ckpt, [2, 2], 3)
    append(spark, table, nid, 2)  # after the stop: the table is ahead of the checkpoint
    return table, sink, ckpt


def case_sink_checkpoint(spark, d):
    """Three batches into a Delta sink whose table writes a checkpoint every 2 versions, and
    its JSON commits below the checkpoint deleted: the txn is only in the checkpoint parquet."""
    inp, sink, ckpt = (os.path.join(d, x) for x in ("input", "sink", "checkpoint"))
    os.makedirs(inp)
    spark.conf.set("spark.databricks.delta.properties.defaults.checkpointInterval", "2")
    q = (spark.readStream.schema("id LONG, s STRING").json(inp)
         .writeStream.format("delta").option("checkpointLocation", ckpt).start(sink))
    for b in range(3):
        with open(os.path.join(inp, "part-%d.json" % b), "w") as f:
            f.write(json.dumps({"id": b, "s": "b%d" % b}) + "\n")
        q.processAllAvailable()
    q.stop()
    spark.conf.unset("spark.databricks.delta.properties.defaults.checkpointInterval")
    log = os.path.join(sink, "_delta_log")
    with open(os.path.join(log, "_last_checkpoint")) as f:
        last = json.load(f)["version"]
    for name in os.listdir(log):
        m = re.match(r"^\.?(\d{20})\.json", name)
        if m and int(m.group(1)) <= last:
            os.remove(os.path.join(log, name))
    shutil.rmtree(inp)


def case_sink(spark, d):
    inp, sink, ckpt = (os.path.join(d, x) for x in ("input", "sink", "checkpoint"))
    os.makedirs(inp)
    schema = "id LONG, s STRING"
    q = (spark.readStream.schema(schema).json(inp)
         .writeStream.format("delta").option("checkpointLocation", ckpt).start(sink))
    for b in range(3):
        with open(os.path.join(inp, "part-%d.json" % b), "w") as f:
            for i in range(2):
                f.write(json.dumps({"id": b * 10 + i, "s": "b%d" % b}) + "\n")
        q.processAllAvailable()
    q.stop()
    # The last batch's commit is lost (a crash after the sink's commit, before Spark's):
    # the restart re-runs batch 2, which the Delta sink skips (txn version 2 is already there).
    os.remove(os.path.join(ckpt, "commits", "2"))
    crc = os.path.join(ckpt, "commits", ".2.crc")
    if os.path.exists(crc):
        os.remove(crc)
    # Spark's own verdict: restart and count the sink's versions before and after.
    before = sorted(f for f in os.listdir(os.path.join(sink, "_delta_log")) if f.endswith(".json"))
    shutil.copytree(ckpt, ckpt + "-rerun")
    q = (spark.readStream.schema(schema).json(inp)
         .writeStream.format("delta").option("checkpointLocation", ckpt + "-rerun").start(sink))
    q.processAllAvailable()
    q.stop()
    after = sorted(f for f in os.listdir(os.path.join(sink, "_delta_log")) if f.endswith(".json"))
    with open(os.path.join(d, "rerun.json"), "w") as f:
        json.dump({"sinkVersionsBefore": len(before), "sinkVersionsAfter": len(after),
                   "rows": spark.read.format("delta").load(sink).count()}, f)
        f.write("\n")
    shutil.rmtree(ckpt + "-rerun")
    shutil.rmtree(inp)


def case_replaced(spark, d):
    table, sink, ckpt = case_source(spark, d)
    shutil.rmtree(table)
    append(spark, table, 100, 3)
    err = restart_error(spark, table, sink, ckpt)
    with open(os.path.join(d, "error.txt"), "w") as f:
        f.write(err)


def case_expired(spark, d):
    table, sink, ckpt = case_source(spark, d, {"delta.checkpointInterval": "2"})
    for i in range(4):
        append(spark, table, 200 + 10 * i, 1)
    log = os.path.join(table, "_delta_log")
    with open(os.path.join(log, "_last_checkpoint")) as f:
        last = json.load(f)["version"]
    # What metadata cleanup does once delta.logRetentionDuration has passed: every commit and
    # checkpoint older than the newest checkpoint goes.
    for name in os.listdir(log):
        m = re.match(r"^\.?(\d{20})\.", name)
        if m and int(m.group(1)) < last:
            os.remove(os.path.join(log, name))
    err = restart_error(spark, table, sink, ckpt)
    with open(os.path.join(d, "error.txt"), "w") as f:
        f.write(err)


def scrub(d, case):
    """Rewrite the absolute temp paths in the fixtures to /fixture/<case>/ and drop .crc files
    outside the Delta logs (they would go stale after the rewrite)."""
    real = os.path.realpath(d)
    for root, _, files in os.walk(d):
        for name in files:
            p = os.path.join(root, name)
            if name.endswith(".parquet"):
                continue
            try:
                data = open(p, "rb").read()
            except OSError:
                continue
            new = data.replace(("file:" + real).encode(), ("file:/fixture/" + case).encode())
            new = new.replace(real.encode(), ("/fixture/" + case).encode())
            if new != data:
                with open(p, "wb") as f:
                    f.write(new)
                crc = os.path.join(root, "." + name + ".crc")
                if os.path.exists(crc):
                    os.remove(crc)


def main():
    out = sys.argv[1]
    cases = sys.argv[2:] or CASES
    spark = session()
    for case in cases:
        d = os.path.join(out, case)
        if os.path.exists(d):
            shutil.rmtree(d)
        os.makedirs(d)
        tmp = "/tmp/ckpt-delta-fixture-" + case
        if os.path.exists(tmp):
            shutil.rmtree(tmp)
        os.makedirs(tmp)
        {"source": lambda t: case_source(spark, t), "sink": lambda t: case_sink(spark, t),
         "replaced": lambda t: case_replaced(spark, t),
         "expired": lambda t: case_expired(spark, t),
         "sink-checkpoint": lambda t: case_sink_checkpoint(spark, t)}[case](tmp)
        scrub(tmp, case)
        shutil.rmtree(d)
        shutil.copytree(tmp, d)
        shutil.rmtree(tmp)
        print("wrote", d, flush=True)
    if set(cases) != set(CASES):
        spark.stop()
        return
    with open(os.path.join(out, "versions.txt"), "w") as f:
        import importlib.metadata as md
        f.write("pyspark %s\ndelta-spark %s\n" % (pyspark.__version__, md.version("delta-spark")))
    spark.stop()


if __name__ == "__main__":
    main()

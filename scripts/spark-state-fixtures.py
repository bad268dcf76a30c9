#!/usr/bin/env python3
"""Write the state-store fixtures of testdata/spark-state/<release>/<case>/ with real Spark.

Usage: python spark-state-fixtures.py OUTDIR [CASE...]
       python spark-state-fixtures.py --dump CASEDIR...      (Spark 3.5 fixtures: read by 4.0)
       python spark-state-fixtures.py --versions CASEDIR...  (RocksDB: oracle/versions/ only)
(run with the python of a venv holding pyspark; the release is pyspark's version).

Each case runs one stateful query on a file source, five micro-batches (one input file each,
processAllAvailable between them, a pause so that state maintenance writes snapshots), then
dumps Spark's own reading of every state store with spark.read.format("statestore") to
oracle/<operator>-<store>.jsonl (the rows of the last committed batch, sorted) and, on 4.0+,
oracle/<operator>-<store>.changes.jsonl (readChangeFeed of the last batch). The checkpoint is
OUTDIR/<case>/checkpoint; the input files are deleted afterwards.
"""
import json
import os
import shutil
import sys
import time

import pyspark
from pyspark.sql import SparkSession, functions as F

RELEASE = pyspark.__version__
MAJOR = int(RELEASE.split(".")[0])
HDFS = "org.apache.spark.sql.execution.streaming.state.HDFSBackedStateStoreProvider"
ROCKS = "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider"

# case name -> (query kind, session conf)
CASES = {
    "agg-hdfs": ("agg", {"spark.sql.streaming.stateStore.providerClass": HDFS}),
    "agg-hdfs-zstd": ("agg", {"spark.sql.streaming.stateStore.providerClass": HDFS,
                              "spark.sql.streaming.stateStore.compression.codec": "zstd"}),
    "agg-hdfs-snappy": ("agg", {"spark.sql.streaming.stateStore.providerClass": HDFS,
                                "spark.sql.streaming.stateStore.compression.codec": "snappy"}),
    "agg-hdfs-lzf": ("agg", {"spark.sql.streaming.stateStore.providerClass": HDFS,
                             "spark.sql.streaming.stateStore.compression.codec": "lzf"}),
    "dedup-hdfs": ("dedup", {"spark.sql.streaming.stateStore.providerClass": HDFS}),
    "join-hdfs": ("join", {"spark.sql.streaming.stateStore.providerClass": HDFS}),
    # TIMESTAMP_NTZ in the key and the value (Spark's JSON writer renders it without a zone).
    "agg-ntz-hdfs": ("agg-ntz", {"spark.sql.streaming.stateStore.providerClass": HDFS}),
    "agg-rocksdb": ("agg", {"spark.sql.streaming.stateStore.providerClass": ROCKS}),
    "agg-rocksdb-changelog": ("agg", {
        "spark.sql.streaming.stateStore.providerClass": ROCKS,
        "spark.sql.streaming.stateStore.rocksdb.changelogCheckpointing.enabled": "true"}),
    "dedup-rocksdb-changelog": ("dedup", {
        "spark.sql.streaming.stateStore.providerClass": ROCKS,
        "spark.sql.streaming.stateStore.rocksdb.changelogCheckpointing.enabled": "true"}),
}
if MAJOR >= 4:
    CASES["agg-rocksdb-v2"] = ("agg", {
        "spark.sql.streaming.stateStore.providerClass": ROCKS,
        "spark.sql.streaming.stateStore.checkpointFormatVersion": "2"})
    # RocksDB's newest table format (footer without the index handle, context checksums)
    # and zstd blocks, as a user may set them; SST files only.
    CASES["agg-rocksdb-fv6-zstd"] = ("agg", {
        "spark.sql.streaming.stateStore.providerClass": ROCKS,
        "spark.sql.streaming.stateStore.rocksdb.formatVersion": "6",
        "spark.sql.streaming.stateStore.rocksdb.compression": "zstd"})
    CASES["agg-rocksdb-changelog-v2"] = ("agg", {
        "spark.sql.streaming.stateStore.providerClass": ROCKS,
        "spark.sql.streaming.stateStore.rocksdb.changelogCheckpointing.enabled": "true",
        "spark.sql.streaming.stateStore.checkpointFormatVersion": "2"})

BATCHES = 5


def rows(batch, side=""):
    """Input rows of one batch: keys repeat across batches so that state is updated, and one
    key per batch is new."""
    out = []
    for i in range(6):
        k = "k%d" % ((i + batch) % 5)
        out.append({
            "k": k, "b": i % 2, "x": batch * 10 + i, "d": (batch + i) / 4.0,
            "s": "v%d-%d%s" % (batch, i, side), "flag": (i % 3 == 0),
            "ts": "2024-01-0%dT00:00:0%d.123Z" % (batch + 1, i),
            "day": "2024-02-0%d" % (i + 1), "amt": "%d.%02d" % (batch, i),
        })
    out.append({"k": "new%d" % batch, "b": 0, "x": batch, "d": 0.5, "s": None, "flag": None,
                "ts": None, "day": None, "amt": None})
    return out


SCHEMA = "k string, b int, x long, d double, s string, flag boolean, ts timestamp, day date, amt decimal(10,2)"


def build(spark, kind, inp):
    src = lambda d: spark.readStream.schema(SCHEMA).option("maxFilesPerTrigger", 1).json(d)
    if kind == "agg":
        return src(inp + "/a").groupBy("k", "b").agg(
            F.count(F.lit(1)).alias("n"), F.sum("x").alias("sx"), F.avg("d").alias("ad"),
            F.max("s").alias("ms"), F.min("ts").alias("mts"), F.max("day").alias("mday"),
            F.sum("amt").alias("samt"), F.max("flag").alias("mflag")), "update"
    if kind == "agg-ntz":
        ntz = F.col("ts").cast("timestamp_ntz")
        return src(inp + "/a").groupBy("k", F.date_trunc("hour", ntz).cast("timestamp_ntz").alias("hour")).agg(
            F.min(ntz).alias("first"), F.max(ntz).alias("last")), "update"
    if kind == "dedup":
        return src(inp + "/a").dropDuplicates(["k", "b"]), "append"
    if kind == "join":
        left = src(inp + "/a").select(F.col("k").alias("lk"), F.col("x").alias("lx"), F.col("s").alias("ls"))
        right = src(inp + "/b").select(F.col("k").alias("rk"), F.col("x").alias("rx"))
        return left.join(right, F.expr("lk = rk")), "append"
    raise ValueError(kind)


def write_batch(inp, kind, batch):
    for side in (["a", "b"] if kind == "join" else ["a"]):
        d = os.path.join(inp, side)
        os.makedirs(d, exist_ok=True)
        tmp = os.path.join(d, ".%d.json.tmp" % batch)
        with open(tmp, "w") as f:
            for r in rows(batch, side if kind == "join" else ""):
                f.write(json.dumps(r) + "\n")
        os.rename(tmp, os.path.join(d, "%d.json" % batch))


def dump(spark, ckpt, oracle):
    os.makedirs(oracle, exist_ok=True)
    meta = os.path.join(ckpt, "state")
    for op in sorted(os.listdir(meta)):
        stores = set()
        opdir = os.path.join(meta, op)
        for p in os.listdir(opdir):
            pdir = os.path.join(opdir, p)
            if not p.isdigit():
                continue
            for n in os.listdir(pdir):
                if os.path.isdir(os.path.join(pdir, n)) and n not in ("SSTs", "_metadata"):
                    stores.add(n)
        if not stores:
            stores = {"default"}
        for store in sorted(stores):
            df = (spark.read.format("statestore").option("operatorId", int(op))
                  .option("storeName", store).load(ckpt))
            lines = sorted(df.toJSON().collect())
            with open(os.path.join(oracle, "%s-%s.jsonl" % (op, store)), "w") as f:
                for l in lines:
                    f.write(l + "\n")
            if MAJOR >= 4:
                last = max(int(n) for n in os.listdir(os.path.join(ckpt, "commits")) if n.isdigit())
                try:
                    df = (spark.read.format("statestore").option("operatorId", int(op))
                          .option("storeName", store).option("readChangeFeed", "true")
                          .option("changeStartBatchId", last).option("changeEndBatchId", last).load(ckpt))
                    lines = sorted(df.toJSON().collect())
                except Exception as e:  # no change feed without changelogs (RocksDB): keep the rows
                    with open(os.path.join(oracle, "%s-%s.changes-error.txt" % (op, store)), "w") as f:
                        f.write("readChangeFeed on Spark %s failed:\n%s\n" % (RELEASE, str(e).splitlines()[0][:2000]))
                    continue
                with open(os.path.join(oracle, "%s-%s.changes.jsonl" % (op, store)), "w") as f:
                    for l in lines:
                        f.write(l + "\n")


def is_rocksdb(ckpt):
    for root, _, files in os.walk(os.path.join(ckpt, "state")):
        if any(f.endswith(".zip") for f in files):
            return True
    return False


def dump_versions(spark, ckpt, oracle):
    """RocksDB stores: Spark's reading of every committed batch (batchId=b reads state version
    b+1) to oracle/versions/<operator>-<store>.batch<b>.jsonl, so that every version a store
    holds, in SST files or changelogs, is compared."""
    if not is_rocksdb(ckpt):
        return
    out = os.path.join(oracle, "versions")
    os.makedirs(out, exist_ok=True)
    meta = os.path.join(ckpt, "state")
    batches = sorted(int(n) for n in os.listdir(os.path.join(ckpt, "commits")) if n.isdigit())
    for op in sorted(os.listdir(meta)):
        if not op.isdigit():
            continue
        for b in batches:
            name = "%s-default.batch%d" % (op, b)
            try:
                df = (spark.read.format("statestore").option("operatorId", int(op))
                      .option("batchId", b).load(ckpt))
                lines = sorted(df.toJSON().collect())
            except Exception as e:
                with open(os.path.join(out, name + ".error.txt"), "w") as f:
                    f.write("batchId %d on Spark %s failed:\n%s\n" % (b, RELEASE, str(e).splitlines()[0][:2000]))
                continue
            with open(os.path.join(out, name + ".jsonl"), "w") as f:
                for l in lines:
                    f.write(l + "\n")


def run_case(out, name):
    kind, conf = CASES[name]
    base = os.path.join(out, name)
    shutil.rmtree(base, ignore_errors=True)
    os.makedirs(base)
    inp = os.path.join("/tmp", "h8-input-%s-%s" % (RELEASE, name))
    shutil.rmtree(inp, ignore_errors=True)
    ckpt = os.path.join(base, "checkpoint")
    b = (SparkSession.builder.master("local[1]").appName(name)
         .config("spark.ui.enabled", "false")
         .config("spark.sql.shuffle.partitions", "2")
         .config("spark.sql.session.timeZone", "UTC")
         .config("spark.sql.streaming.stateStore.minDeltasForSnapshot", "2")
         .config("spark.sql.streaming.stateStore.maintenanceInterval", "1s")
         .config("spark.sql.streaming.minBatchesToRetain", "100"))
    for k, v in conf.items():
        b = b.config(k, v)
    spark = b.getOrCreate()
    for k, v in conf.items():
        spark.conf.set(k, v)
    try:
        write_batch(inp, kind, 0)
        df, mode = build(spark, kind, inp)
        q = (df.writeStream.format("noop").outputMode(mode).option("checkpointLocation", ckpt)
             .trigger(processingTime="200 milliseconds").start())
        q.processAllAvailable()
        for batch in range(1, BATCHES):
            time.sleep(2.5)
            write_batch(inp, kind, batch)
            q.processAllAvailable()
        time.sleep(2.5)
        q.stop()
        if MAJOR >= 4:
            try:
                dump(spark, ckpt, os.path.join(base, "oracle"))
                dump_versions(spark, ckpt, os.path.join(base, "oracle"))
            except Exception as e:  # Spark's reader fails on some checkpoints: keep its error
                shutil.rmtree(os.path.join(base, "oracle"), ignore_errors=True)
                os.makedirs(os.path.join(base, "oracle"))
                with open(os.path.join(base, "oracle", "error.txt"), "w") as f:
                    f.write("spark.read.format(\"statestore\") on Spark %s failed:\n%s\n" % (RELEASE, str(e).splitlines()[0][:2000]))
        with open(os.path.join(base, "conf.json"), "w") as f:
            json.dump({"release": RELEASE, "query": kind, "conf": conf}, f, indent=1, sort_keys=True)
            f.write("\n")
    finally:
        spark.stop()
        shutil.rmtree(inp, ignore_errors=True)
    # Spark writes .crc files next to every file: they are part of what Spark leaves.


def dump_only(case_dir):
    """Spark 3.5 has no state reader: its fixtures are read by a later release."""
    spark = (SparkSession.builder.master("local[1]").appName("dump")
             .config("spark.ui.enabled", "false")
             .config("spark.sql.session.timeZone", "UTC").getOrCreate())
    try:
        dump(spark, os.path.join(case_dir, "checkpoint"), os.path.join(case_dir, "oracle"))
        dump_versions(spark, os.path.join(case_dir, "checkpoint"), os.path.join(case_dir, "oracle"))
        with open(os.path.join(case_dir, "oracle", "reader.txt"), "w") as f:
            f.write("read by Spark %s\n" % RELEASE)
    finally:
        spark.stop()


def main():
    if sys.argv[1] == "--dump":
        for d in sys.argv[2:]:
            dump_only(d)
        return
    if sys.argv[1] == "--versions":
        # Only the per-version readings of existing RocksDB fixtures (oracle/versions/).
        spark = (SparkSession.builder.master("local[1]").appName("versions")
                 .config("spark.ui.enabled", "false")
                 .config("spark.sql.session.timeZone", "UTC").getOrCreate())
        # Spark 4.1's reader asks the state store coordinator, which starts with the session's
        # streaming query manager: touch it (a session that ran a query has it).
        spark.streams.active
        try:
            for d in sys.argv[2:]:
                # The reader loads versions with the session's store conf (changelog
                # checkpointing is not in the offset log): the case's conf.
                with open(os.path.join(d, "conf.json")) as f:
                    conf = json.load(f)["conf"]
                for k, v in conf.items():
                    spark.conf.set(k, v)
                shutil.rmtree(os.path.join(d, "oracle", "versions"), ignore_errors=True)
                dump_versions(spark, os.path.join(d, "checkpoint"), os.path.join(d, "oracle"))
                for k in conf:
                    spark.conf.unset(k)
        finally:
            spark.stop()
        return
    out = os.path.join(sys.argv[1], RELEASE)
    names = sys.argv[2:]
    if len(names) == 1:
        run_case(out, names[0])
        return
    # One process per case: SparkSession.builder keeps its options across sessions.
    import subprocess
    for n in names or list(CASES):
        print("case", RELEASE, n, flush=True)
        subprocess.run([sys.executable, __file__, sys.argv[1], n], check=True)


if __name__ == "__main__":
    main()

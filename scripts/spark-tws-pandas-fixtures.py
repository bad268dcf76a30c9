#!/usr/bin/env python3
"""Write testdata/spark-state/<release>/tws-pandas/ with real Spark: the query of
scripts/spark-tws-fixtures/TwsFixture.java (a ValueState, a ListState, a MapState and a
processing-time timer per key) as transformWithStateInPandas, RocksDB with changelogs, five
micro-batches, then Spark's statestore reader for every state variable into oracle/vars/.

Usage: PYSPARK_PYTHON=VENV/bin/python VENV/bin/python spark-tws-pandas-fixtures.py OUTDIR
(a venv with pyspark, pandas, pyarrow and protobuf; the workers need them too; the release
is pyspark's)
"""
import json
import os
import shutil
import sys
import time

import pandas as pd
import pyspark
from pyspark.sql import SparkSession
from pyspark.sql.streaming import StatefulProcessor

RELEASE = pyspark.__version__
ROCKS = "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider"
VARS = ["countState", "listState", "mapState"]
FAR = 4102444800000  # 2100-01-01: the timers never fire


class Proc(StatefulProcessor):
    def init(self, handle):
        self.handle = handle
        self.count = handle.getValueState("countState", "value long")
        self.list = handle.getListState("listState", "value string")
        self.map = handle.getMapState("mapState", "value string", "value long")

    def handleInputRows(self, key, rows, timerValues):
        k = key[0]
        n = self.count.get()[0] if self.count.exists() else 0
        batch = -1
        for pdf in rows:
            for _, r in pdf.iterrows():
                x = int(r["x"])
                s = "none" if r["s"] is None or pd.isna(r["s"]) else r["s"]
                batch = x // 10
                n += 1
                self.list.appendValue((s,))
                prev = self.map.getValue((s,))[0] if self.map.containsKey((s,)) else 0
                self.map.updateValue((s,), (prev + x,))
                if x % 7 == 3:
                    self.map.removeKey((s,))
        if k == "k3" and batch == 3:
            self.count.clear()
            self.list.clear()
        else:
            self.count.update((n,))
        if k == "k2" and batch == 2:
            self.map.clear()
        t = FAR + sum(map(ord, k)) % 1000
        if k == "k4" and batch == 4:
            self.handle.deleteTimer(t)
        else:
            self.handle.registerTimer(t)
        yield pd.DataFrame({"k": [k], "n": [n]})

    def close(self):
        pass


def write_batch(inp, batch):
    os.makedirs(inp, exist_ok=True)
    tmp = os.path.join(inp, ".%d.json.tmp" % batch)
    with open(tmp, "w") as f:
        for i in range(4):
            f.write(json.dumps({"k": "k%d" % ((i + batch) % 5), "x": batch * 10 + i, "s": "s%d" % ((i + batch) % 3)}) + "\n")
        f.write(json.dumps({"k": "new%d" % batch, "x": batch * 10 + 9, "s": None}) + "\n")
    os.rename(tmp, os.path.join(inp, "%d.json" % batch))


def read(spark, ckpt, out, name, opts):
    r = spark.read.format("statestore").option("operatorId", 0)
    for k, v in opts.items():
        r = r.option(k, v)
    os.makedirs(out, exist_ok=True)
    try:
        lines = sorted(r.load(ckpt).toJSON().collect())
    except Exception as e:
        with open(os.path.join(out, name + ".error.txt"), "w") as f:
            f.write("statestore %s on Spark %s failed:\n%s\n" % (opts, RELEASE, str(e).splitlines()[0][:2000]))
        return
    with open(os.path.join(out, name + ".jsonl"), "w") as f:
        for l in lines:
            f.write(l + "\n")


def main():
    name = "tws-pandas"
    base = os.path.join(sys.argv[1], RELEASE, name)
    shutil.rmtree(base, ignore_errors=True)
    os.makedirs(base)
    ckpt = os.path.join(base, "checkpoint")
    inp = "/tmp/tws-input-%s-%s" % (RELEASE, name)
    shutil.rmtree(inp, ignore_errors=True)
    conf = {"spark.sql.streaming.stateStore.providerClass": ROCKS,
            "spark.sql.streaming.stateStore.rocksdb.changelogCheckpointing.enabled": "true",
            "spark.sql.streaming.noDataMicroBatches.enabled": "false"}
    b = (SparkSession.builder.master("local[1]").appName(name)
         .config("spark.ui.enabled", "false")
         .config("spark.sql.shuffle.partitions", "2")
         .config("spark.sql.session.timeZone", "UTC")
         .config("spark.sql.streaming.stateStore.minDeltasForSnapshot", "2")
         .config("spark.sql.streaming.stateStore.maintenanceInterval", "1s")
         .config("spark.sql.streaming.minBatchesToRetain", "100")
         .config("spark.sql.warehouse.dir", "/tmp/tws-fixture-warehouse"))
    for k, v in conf.items():
        b = b.config(k, v)
    spark = b.getOrCreate()
    try:
        write_batch(inp, 0)
        src = spark.readStream.schema("k string, x long, s string").option("maxFilesPerTrigger", 1).json(inp)
        res = src.groupBy("k").transformWithStateInPandas(
            statefulProcessor=Proc(), outputStructType="k string, n long",
            outputMode="Update", timeMode="ProcessingTime")
        q = (res.writeStream.format("noop").outputMode("update").option("checkpointLocation", ckpt)
             .trigger(processingTime="200 milliseconds").start())
        q.processAllAvailable()
        for batch in range(1, 5):
            time.sleep(2.5)
            write_batch(inp, batch)
            q.processAllAvailable()
        time.sleep(2.5)
        q.stop()
        out = os.path.join(base, "oracle", "vars")
        for v in VARS:
            p = "0-default." + v
            read(spark, ckpt, out, p, {"stateVarName": v})
            if v != "countState":
                read(spark, ckpt, out, p + ".nested", {"stateVarName": v, "flattenCollectionTypes": "false"})
            read(spark, ckpt, out, p + ".changes", {"stateVarName": v, "readChangeFeed": "true",
                                                    "changeStartBatchId": 4, "changeEndBatchId": 4})
            for bt in range(5):
                read(spark, ckpt, out, p + ".batch%d" % bt, {"stateVarName": v, "batchId": bt})
        read(spark, ckpt, out, "0-default.timers", {"readRegisteredTimers": "true"})
        read(spark, ckpt, out, "0-default.novar", {})
        with open(os.path.join(base, "conf.json"), "w") as f:
            json.dump({"release": RELEASE, "query": "tws-pandas", "conf": conf}, f, indent=1, sort_keys=True)
            f.write("\n")
    finally:
        spark.stop()
        shutil.rmtree(inp, ignore_errors=True)


if __name__ == "__main__":
    main()

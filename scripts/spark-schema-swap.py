#!/usr/bin/env python3
"""Restart the schema-swap cases of testdata/spark-state-swap/cases.tsv on real Spark and write
what Spark did to testdata/spark-state-swap/<spark>/<name>.json (the goldens of doctor's
state-schema check; they come from Spark only).

Usage: python3 scripts/spark-schema-swap.py [SPARK_RELEASE...]   (default: every release named)

Each case: a copy of testdata/spark-state/<fixture>/checkpoint whose state/0/0/_metadata/schema
(and its .schema.crc, as a copy of the directory would carry it) is the donor fixture's, the
fixture's query (conf.json "query") and session conf, one new input file, restarted by
spark/StateRestart.java on the installed release (scripts/spark.sh), one JVM per release.
Paths in Spark's messages become <checkpoint>.
"""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SWAP = os.path.join(ROOT, "testdata", "spark-state-swap")
STATE = os.path.join(ROOT, "testdata", "spark-state")
SCHEMA = os.path.join("state", "0", "0", "_metadata")


def cases():
    out = []
    with open(os.path.join(SWAP, "cases.tsv")) as f:
        for line in f:
            if line.startswith("#") or not line.strip():
                continue
            name, spark, fixture, donor = line.rstrip("\n").split("\t")
            out.append((name, spark, fixture, donor))
    return out


def rows(batch):
    """The fixture script's input rows of one batch (scripts/spark-state-fixtures.py)."""
    out = []
    for i in range(6):
        out.append({
            "k": "k%d" % ((i + batch) % 5), "b": i % 2, "x": batch * 10 + i, "d": (batch + i) / 4.0,
            "s": "v%d-%d" % (batch, i), "flag": (i % 3 == 0),
            "ts": "2024-01-0%dT00:00:0%d.123Z" % (batch + 1, i),
            "day": "2024-02-0%d" % (i + 1), "amt": "%d.%02d" % (batch, i),
        })
    out.append({"k": "new%d" % batch, "b": 0, "x": batch, "d": 0.5, "s": None, "flag": None,
                "ts": None, "day": None, "amt": None})
    return out


def input_dir(ckpt):
    """The source directory the checkpoint's file source log names: Spark re-plans the last
    committed batch on restart and refuses another base path."""
    with open(os.path.join(ckpt, "sources", "0", "0")) as f:
        path = json.loads(f.read().splitlines()[1])["path"]
    return os.path.dirname(os.path.dirname(path.replace("file://", "")))


def write_inputs(inp):
    d = os.path.join(inp, "a")
    shutil.rmtree(inp, ignore_errors=True)
    os.makedirs(d)
    for b in range(5):
        with open(os.path.join(d, "%d.json" % b), "w") as f:
            for r in rows(b):
                f.write(json.dumps(r) + "\n")


def prepare(tmp, name, spark, fixture, donor):
    """The recipe (internal/doctor's test applies the same one)."""
    ckpt = os.path.join(tmp, spark + "-" + name, "checkpoint")
    shutil.copytree(os.path.join(STATE, fixture, "checkpoint"), ckpt)
    for f in ("schema", ".schema.crc"):
        shutil.copyfile(os.path.join(STATE, donor, "checkpoint", SCHEMA, f), os.path.join(ckpt, SCHEMA, f))
    return ckpt


def main():
    want = set(sys.argv[1:])
    by_release = {}
    for c in cases():
        if not want or c[1] in want:
            by_release.setdefault(c[1], []).append(c)
    opens = []
    for p in ("java.lang", "java.lang.invoke", "java.lang.reflect", "java.io", "java.net", "java.nio",
              "java.util", "java.util.concurrent", "java.util.concurrent.atomic", "sun.nio.ch",
              "sun.nio.cs", "sun.security.action", "sun.util.calendar"):
        opens.append("--add-opens=java.base/%s=ALL-UNNAMED" % p)
    for rel, cs in sorted(by_release.items()):
        cache = os.environ.get("CKPT_SPARK_CACHE", os.path.expanduser("~/.cache/ckpt-spark"))
        jars = os.path.join(cache, rel, "jars", "*")
        tmp = tempfile.mkdtemp(prefix="ckpt-schema-swap-")
        classes = os.path.join(tmp, "classes")
        subprocess.run(["javac", "-nowarn", "-d", classes, "-cp", jars,
                        os.path.join(ROOT, "spark", "StateRestart.java")], check=True)
        reqs, ckpts, inputs = [], {}, []
        for name, spark, fixture, donor in cs:
            ckpt = prepare(tmp, name, spark, fixture, donor)
            ckpts[name] = ckpt
            conf = json.load(open(os.path.join(STATE, fixture, "conf.json")))
            inp = input_dir(ckpt)
            write_inputs(inp)
            inputs.append(inp)
            reqs.append("\t".join([name, ckpt, conf["query"], inp] +
                                  ["%s=%s" % kv for kv in sorted(conf["conf"].items())]))
        p = subprocess.run(["java", "-Xmx1g", "-XX:+UseSerialGC"] + opens +
                           ["-Djdk.reflect.useDirectMethodHandle=false", "-Dio.netty.tryReflectionSetAccessible=true",
                            "-cp", classes + os.pathsep + jars, "StateRestart"],
                           input="\n".join(reqs) + "\n", capture_output=True, text=True)
        if p.returncode != 0:
            sys.stderr.write(p.stderr[-4000:])
            sys.exit("StateRestart on %s failed" % rel)
        os.makedirs(os.path.join(SWAP, rel), exist_ok=True)
        for line in p.stdout.splitlines():
            if not line.startswith("{"):
                continue
            res = json.loads(line)
            name = res.pop("case")
            text = json.dumps(res, indent=1, sort_keys=True)
            ck = ckpts[name]
            for form in ("file:" + ck, ck):
                text = text.replace(form, "<checkpoint>")
            text = re.sub(r"runId = [0-9a-f-]{36}", "runId = <uuid>", text)
            with open(os.path.join(SWAP, rel, name + ".json"), "w") as f:
                f.write(text + "\n")
            print(rel, name, res.get("outcome"), res.get("errorClass"))
        shutil.rmtree(tmp)
        for inp in inputs:
            shutil.rmtree(inp, ignore_errors=True)


if __name__ == "__main__":
    main()

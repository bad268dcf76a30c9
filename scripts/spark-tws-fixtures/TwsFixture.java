// Writes the transformWithState fixtures of testdata/spark-state/<release>/tws-*/ with real Spark
// (see scripts/spark-tws-fixtures.sh): a Scala-API transformWithState query (ValueState,
// ListState, MapState and processing-time timers) on a RocksDB store, five micro-batches, then
// Spark's own statestore reader for every state variable into oracle/vars/.

import java.io.File;
import java.io.IOException;
import java.io.PrintWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import org.apache.spark.api.java.function.MapFunction;
import org.apache.spark.sql.DataFrameReader;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Encoders;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.streaming.ListState;
import org.apache.spark.sql.streaming.MapState;
import org.apache.spark.sql.streaming.OutputMode;
import org.apache.spark.sql.streaming.StatefulProcessor;
import org.apache.spark.sql.streaming.StreamingQuery;
import org.apache.spark.sql.streaming.TTLConfig;
import org.apache.spark.sql.streaming.TimeMode;
import org.apache.spark.sql.streaming.TimerValues;
import org.apache.spark.sql.streaming.ValueState;

public class TwsFixture {
  static final String ROCKS = "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider";
  static final int BATCHES = 5;
  // The state variables of Proc, as Spark's reader names them (stateVarName).
  static final String[] VARS = {"countState", "listState", "mapState"};

  /** Counts rows per key, keeps the batch's strings in a list and sums x per string in a map;
   * deletes now and then so that changelogs and SST files hold deletions; one far timer per key. */
  public static class Proc extends StatefulProcessor<String, Row, String> {
    transient ValueState<Long> count;
    transient ListState<String> list;
    transient MapState<String, Long> map;
    // ttl: every variable with a one-day TTL (tws-ttl), which no row reaches in the run.
    final boolean ttl;

    Proc(boolean ttl) {
      this.ttl = ttl;
    }

    @Override
    public void init(OutputMode outputMode, TimeMode timeMode) {
      TTLConfig t = ttl ? TTLConfig.apply(java.time.Duration.ofDays(1)) : TTLConfig.NONE();
      count = getHandle().getValueState("countState", Encoders.LONG(), t);
      list = getHandle().getListState("listState", Encoders.STRING(), t);
      map = getHandle().getMapState("mapState", Encoders.STRING(), Encoders.LONG(), t);
    }

    @Override
    public scala.collection.Iterator<String> handleInputRows(String key, scala.collection.Iterator<Row> rows, TimerValues timers) {
      long n = count.exists() ? count.get() : 0L;
      long batch = -1;
      while (rows.hasNext()) {
        Row r = rows.next();
        long x = r.getLong(1);
        String s = r.isNullAt(2) ? "none" : r.getString(2);
        batch = x / 10;
        n++;
        list.appendValue(s);
        long prev = map.containsKey(s) ? map.getValue(s) : 0L;
        map.updateValue(s, prev + x);
        if (x % 7 == 3) {
          map.removeKey(s);
        }
      }
      if (key.equals("k3") && batch == 3) {
        count.clear();
        list.clear();
      } else {
        count.update(n);
      }
      if (key.equals("k2") && batch == 2) {
        map.clear();
      }
      // Far in the future: the timer stays registered (4102444800000 = 2100-01-01).
      if (key.equals("k4") && batch == 4) {
        getHandle().deleteTimer(4102444800000L + key.hashCode() % 1000);
      } else {
        getHandle().registerTimer(4102444800000L + key.hashCode() % 1000);
      }
      return scala.jdk.javaapi.CollectionConverters.asScala(Collections.singletonList(key + "=" + n).iterator());
    }
  }

  static void writeBatch(String inp, int batch) throws IOException {
    Files.createDirectories(Path.of(inp));
    StringBuilder sb = new StringBuilder();
    for (int i = 0; i < 4; i++) {
      String k = "k" + ((i + batch) % 5);
      sb.append(String.format("{\"k\":\"%s\",\"x\":%d,\"s\":\"s%d\"}\n", k, batch * 10 + i, (i + batch) % 3));
    }
    sb.append(String.format("{\"k\":\"new%d\",\"x\":%d,\"s\":null}\n", batch, batch * 10 + 9));
    Path tmp = Path.of(inp, "." + batch + ".json.tmp");
    Files.writeString(tmp, sb.toString());
    Files.move(tmp, Path.of(inp, batch + ".json"));
  }

  static void writeLines(File f, List<String> lines) throws IOException {
    f.getParentFile().mkdirs();
    Collections.sort(lines);
    try (PrintWriter w = new PrintWriter(f, StandardCharsets.UTF_8)) {
      for (String l : lines) {
        w.print(l + "\n");
      }
    }
  }

  static void writeError(File f, String release, String what, Exception e) throws IOException {
    f.getParentFile().mkdirs();
    String msg = String.valueOf(e.getMessage()).split("\n")[0];
    if (msg.length() > 2000) msg = msg.substring(0, 2000);
    try (PrintWriter w = new PrintWriter(f, StandardCharsets.UTF_8)) {
      w.print(what + " on Spark " + release + " failed:\n" + msg + "\n");
    }
  }

  /** One reading of Spark's reader into name.jsonl (or name.error.txt when it fails). */
  static void read(SparkSession spark, String ckpt, File dir, String name, Map<String, String> opts) throws IOException {
    DataFrameReader r = spark.read().format("statestore").option("operatorId", "0");
    for (Map.Entry<String, String> e : opts.entrySet()) {
      r = r.option(e.getKey(), e.getValue());
    }
    try {
      List<String> lines = new ArrayList<>(r.load(ckpt).toJSON().collectAsList());
      writeLines(new File(dir, name + ".jsonl"), lines);
    } catch (Exception e) {
      writeError(new File(dir, name + ".error.txt"), spark.version(), "statestore " + opts, e);
    }
  }

  static Map<String, String> opts(String... kv) {
    Map<String, String> m = new LinkedHashMap<>();
    for (int i = 0; i < kv.length; i += 2) m.put(kv[i], kv[i + 1]);
    return m;
  }

  static void dump(SparkSession spark, String ckpt, File oracle, int lastBatch) throws IOException {
    File vars = new File(oracle, "vars");
    for (String v : VARS) {
      String base = "0-default." + v;
      read(spark, ckpt, vars, base, opts("stateVarName", v));
      if (!v.equals("countState")) {
        read(spark, ckpt, vars, base + ".nested", opts("stateVarName", v, "flattenCollectionTypes", "false"));
      }
      read(spark, ckpt, vars, base + ".changes", opts("stateVarName", v, "readChangeFeed", "true",
          "changeStartBatchId", "" + lastBatch, "changeEndBatchId", "" + lastBatch));
      for (int b = 0; b <= lastBatch; b++) {
        read(spark, ckpt, vars, base + ".batch" + b, opts("stateVarName", v, "batchId", "" + b));
      }
    }
    read(spark, ckpt, vars, "0-default.timers", opts("readRegisteredTimers", "true"));
    // Without stateVarName Spark refuses a transformWithState operator: keep its words.
    read(spark, ckpt, vars, "0-default.novar", opts());
  }

  public static void main(String[] args) throws Exception {
    String out = args[0], name = args[1];
    boolean changelog = name.contains("changelog") || name.contains("ttl");
    // tws-changelog-v2: checkpoint format v2 (<version>_<uuid> files, changelog v4 with lineage).
    String format = name.endsWith("-v2") ? "2" : "1";
    SparkSession spark = SparkSession.builder().master("local[1]").appName(name)
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.sql.streaming.stateStore.minDeltasForSnapshot", "2")
        .config("spark.sql.streaming.stateStore.maintenanceInterval", "1s")
        .config("spark.sql.streaming.minBatchesToRetain", "100")
        .config("spark.sql.streaming.stateStore.providerClass", ROCKS)
        // Processing-time timers would ask for a batch on every trigger: batches only for input.
        .config("spark.sql.streaming.noDataMicroBatches.enabled", "false")
        .config("spark.sql.warehouse.dir", "/tmp/tws-fixture-warehouse")
        .config("spark.sql.streaming.stateStore.checkpointFormatVersion", format)
        .config("spark.sql.streaming.stateStore.rocksdb.changelogCheckpointing.enabled", "" + changelog)
        .getOrCreate();
    String release = spark.version();
    File base = new File(out, release + "/" + name);
    deleteAll(base);
    base.mkdirs();
    String inp = "/tmp/tws-input-" + release + "-" + name;
    deleteAll(new File(inp));
    String ckpt = new File(base, "checkpoint").getPath();
    try {
      writeBatch(inp, 0);
      Dataset<Row> src = spark.readStream().schema("k string, x long, s string").option("maxFilesPerTrigger", 1).json(inp);
      Dataset<String> res = src.groupByKey((MapFunction<Row, String>) r -> r.getString(0), Encoders.STRING())
          .transformWithState(new Proc(name.contains("ttl")), TimeMode.ProcessingTime(), OutputMode.Update(), Encoders.STRING());
      StreamingQuery q = res.writeStream().format("noop").outputMode("update").option("checkpointLocation", ckpt)
          .trigger(org.apache.spark.sql.streaming.Trigger.ProcessingTime(200)).start();
      q.processAllAvailable();
      for (int b = 1; b < BATCHES; b++) {
        Thread.sleep(2500);
        writeBatch(inp, b);
        q.processAllAvailable();
      }
      Thread.sleep(2500);
      q.stop();
      dump(spark, ckpt, new File(base, "oracle"), BATCHES - 1);
      try (PrintWriter w = new PrintWriter(new File(base, "conf.json"), StandardCharsets.UTF_8)) {
        w.print("{\n \"conf\": {\n  \"spark.sql.streaming.stateStore.providerClass\": \"" + ROCKS + "\",\n"
            + "  \"spark.sql.streaming.stateStore.rocksdb.changelogCheckpointing.enabled\": \"" + changelog + "\",\n"
            + "  \"spark.sql.streaming.noDataMicroBatches.enabled\": \"false\"" + (format.equals("2") ? ",\n  \"spark.sql.streaming.stateStore.checkpointFormatVersion\": \"2\"" : "") + "\n },\n"
            + " \"query\": \"tws\",\n \"release\": \"" + release + "\"\n}\n");
      }
    } finally {
      spark.stop();
      deleteAll(new File(inp));
    }
  }

  static void deleteAll(File f) throws IOException {
    if (!f.exists()) return;
    List<Path> paths = new ArrayList<>();
    try (var s = Files.walk(f.toPath())) {
      s.forEach(paths::add);
    }
    paths.sort(Comparator.reverseOrder());
    for (Path p : paths) Files.delete(p);
  }
}

// Runs streaming aggregations over Kafka and reads their state: the Spark side of ckpt run's
// stateful hand-over tests (internal/sparkoracle/aggregation_test.go). One JVM, one request per
// stdin line (JSON), "done\t<result file>" on stdout after each; the result is a JSON file.
//
// A query request: {"result":F,"checkpoint":C,"bootstrap":H:P,"topic":T,"outTopic":O,
//   "groupBy":[SQL...],"agg":[SQL...],"project":[SQL...],"outputMode":"update",
//   "maxOffsetsPerTrigger":"10","shufflePartitions":"2","watermark":["timestamp","10 seconds"]}
// runs readStream kafka → withWatermark (when given) → groupBy(groupBy).agg(agg).selectExpr(project) → Kafka topic O with
// Trigger.AvailableNow, and writes {"outcome":"ok"|"error","error":..,"batches":[ids]}.
// "sink":"noop" writes to Spark's noop sink instead (no outTopic). Every query result also has
// "queryMs" (wall time from start() to the end), "cpuMs" (the JVM's CPU time over that span),
// "triggerMs" (the batches' triggerExecution summed) and "inputRows": BenchmarkAggThroughputVsSpark
// (internal/sparkoracle/aggbench_test.go) times Spark with them, with the master (default
// local[1]) as the first argument. "ready" is printed once the session is up.
// With "select":[SQL...],"dropDuplicates":[col...] instead of groupBy and agg the query is
// selectExpr(select).dropDuplicates(cols) (TestSparkLiveDedupHandOver,
// internal/sparkoracle/dedup_test.go); "dropDuplicatesWithinWatermark":[col...] likewise runs
// dropDuplicatesWithinWatermark(cols) (Spark 3.5+).
// "conf" holds session confs for that query only (the state store provider, its snapshot and
// retention confs), unset after it.
// A read request: {"result":F,"read":C,"batchId":N} writes Spark's statestore reading of
// operator 0 at batch N (all rows, sorted JSON lines) to F, or F.error.

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.lang.management.ManagementFactory;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import org.apache.spark.sql.Column;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.functions;
import org.apache.spark.sql.streaming.StreamingQuery;
import org.apache.spark.sql.streaming.StreamingQueryProgress;
import org.apache.spark.sql.streaming.Trigger;

public class AggRun {
  static final ObjectMapper M = new ObjectMapper();

  static Column[] exprs(JsonNode a) {
    List<Column> out = new ArrayList<>();
    for (JsonNode n : a) out.add(functions.expr(n.asText()));
    return out.toArray(new Column[0]);
  }

  static String[] texts(JsonNode a) {
    List<String> out = new ArrayList<>();
    for (JsonNode n : a) out.add(n.asText());
    return out.toArray(new String[0]);
  }

  static long cpuNanos() {
    return ((com.sun.management.OperatingSystemMXBean) ManagementFactory.getOperatingSystemMXBean()).getProcessCpuTime();
  }

  public static void main(String[] args) throws Exception {
    SparkSession spark = SparkSession.builder().master(args.length > 0 ? args[0] : "local[1]").appName("ckpt-agg-run")
        .config("spark.ui.enabled", "false").config("spark.driver.host", "127.0.0.1")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.sql.streaming.noDataProgressEventInterval", "3600000").getOrCreate();
    spark.sparkContext().setLogLevel("ERROR");
    spark.streams();
    System.out.println("ready");
    System.out.flush();
    BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
    for (String line; (line = in.readLine()) != null; ) {
      if (line.isBlank()) continue;
      JsonNode n = M.readTree(line);
      String result = n.get("result").asText();
      if (n.has("read")) {
        try {
          Dataset<Row> df = spark.read().format("statestore").option("operatorId", 0)
              .option("batchId", n.get("batchId").asLong()).load(n.get("read").asText());
          List<String> rows = new ArrayList<>(df.toJSON().collectAsList());
          Collections.sort(rows);
          Files.write(Paths.get(result), rows, StandardCharsets.UTF_8);
        } catch (Exception e) {
          String msg = String.valueOf(e.getMessage()).split("\n", 2)[0];
          Files.write(Paths.get(result + ".error"), (e.getClass().getName() + ": " + msg + "\n").getBytes(StandardCharsets.UTF_8));
        }
        System.out.println("done\t" + result);
        continue;
      }
      ObjectNode res = M.createObjectNode();
      ArrayNode batches = res.putArray("batches");
      StreamingQuery q = null;
      long t0 = System.nanoTime(), c0 = cpuNanos();
      List<String> confs = new ArrayList<>();
      n.path("conf").fieldNames().forEachRemaining(confs::add);
      try {
        spark.conf().set("spark.sql.shuffle.partitions", n.path("shufflePartitions").asText("2"));
        for (String k : confs) spark.conf().set(k, n.get("conf").get(k).asText());
        Dataset<Row> df = spark.readStream().format("kafka")
            .option("kafka.bootstrap.servers", n.get("bootstrap").asText())
            .option("subscribe", n.get("topic").asText())
            .option("startingOffsets", "earliest")
            .option("maxOffsetsPerTrigger", n.path("maxOffsetsPerTrigger").asText("10")).load();
        if (n.has("watermark")) df = df.withWatermark(n.get("watermark").get(0).asText(), n.get("watermark").get(1).asText());
        Dataset<Row> out;
        if (n.has("dropDuplicates")) {
          out = df.selectExpr(texts(n.get("select"))).dropDuplicates(texts(n.get("dropDuplicates")));
        } else if (n.has("dropDuplicatesWithinWatermark")) {
          out = df.selectExpr(texts(n.get("select"))).dropDuplicatesWithinWatermark(texts(n.get("dropDuplicatesWithinWatermark")));
        } else {
          Column[] aggs = exprs(n.get("agg"));
          Column[] rest = new Column[aggs.length - 1];
          System.arraycopy(aggs, 1, rest, 0, rest.length);
          out = df.groupBy(exprs(n.get("groupBy"))).agg(aggs[0], rest);
        }
        if (n.has("project")) out = out.selectExpr(texts(n.get("project")));
        org.apache.spark.sql.streaming.DataStreamWriter<Row> w = out.writeStream();
        if (n.path("sink").asText("kafka").equals("noop")) {
          w = w.format("noop");
        } else {
          w = w.format("kafka").option("kafka.bootstrap.servers", n.get("bootstrap").asText())
              .option("topic", n.get("outTopic").asText());
        }
        t0 = System.nanoTime();
        c0 = cpuNanos();
        q = w.option("checkpointLocation", n.get("checkpoint").asText())
            .outputMode(n.path("outputMode").asText("update"))
            .trigger(Trigger.AvailableNow()).start();
        if (!q.awaitTermination(n.path("timeoutMs").asLong(180_000))) {
          q.stop();
          throw new RuntimeException("timed out");
        }
        if (q.exception().isDefined()) throw q.exception().get();
        res.put("outcome", "ok");
      } catch (Throwable t) {
        res.put("outcome", "error");
        res.put("errorClass", t.getClass().getName());
        res.put("error", String.valueOf(t.getMessage()));
      }
      for (String k : confs) spark.conf().unset(k);
      res.put("queryMs", (System.nanoTime() - t0) / 1e6);
      res.put("cpuMs", (cpuNanos() - c0) / 1e6);
      long rows = 0, trigger = 0;
      if (q != null) {
        for (StreamingQueryProgress p : q.recentProgress()) {
          if (p.durationMs().containsKey("addBatch")) batches.add(p.batchId());
          rows += p.numInputRows();
          Long te = p.durationMs().get("triggerExecution");
          if (te != null) trigger += te;
        }
      }
      res.put("inputRows", rows);
      res.put("triggerMs", trigger);
      Files.write(Paths.get(result), M.writeValueAsBytes(res));
      System.out.println("done\t" + result);
      System.out.flush();
    }
    spark.stop();
  }
}

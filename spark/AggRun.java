// Runs streaming aggregations over Kafka and reads their state: the Spark side of ckpt run's
// stateful hand-over tests (internal/sparkoracle/aggregation_test.go). One JVM, one request per
// stdin line (JSON), "done\t<result file>" on stdout after each; the result is a JSON file.
//
// A query request: {"result":F,"checkpoint":C,"bootstrap":H:P,"topic":T,"outTopic":O,
//   "groupBy":[SQL...],"agg":[SQL...],"project":[SQL...],"outputMode":"update",
//   "maxOffsetsPerTrigger":"10","shufflePartitions":"2"}
// runs readStream kafka → groupBy(groupBy).agg(agg).selectExpr(project) → Kafka topic O with
// Trigger.AvailableNow, and writes {"outcome":"ok"|"error","error":..,"batches":[ids]}. With
// "select":[SQL...],"dropDuplicates":[col...] instead of groupBy and agg the query is
// selectExpr(select).dropDuplicates(cols) (TestSparkLiveDedupHandOver,
// internal/sparkoracle/dedup_test.go).
// A read request: {"result":F,"read":C,"batchId":N} writes Spark's statestore reading of
// operator 0 at batch N (all rows, sorted JSON lines) to F, or F.error.

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.BufferedReader;
import java.io.InputStreamReader;
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

  public static void main(String[] args) throws Exception {
    SparkSession spark = SparkSession.builder().master("local[1]").appName("ckpt-agg-run")
        .config("spark.ui.enabled", "false").config("spark.driver.host", "127.0.0.1")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.sql.streaming.noDataProgressEventInterval", "3600000").getOrCreate();
    spark.sparkContext().setLogLevel("ERROR");
    spark.streams();
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
      try {
        spark.conf().set("spark.sql.shuffle.partitions", n.path("shufflePartitions").asText("2"));
        Dataset<Row> df = spark.readStream().format("kafka")
            .option("kafka.bootstrap.servers", n.get("bootstrap").asText())
            .option("subscribe", n.get("topic").asText())
            .option("startingOffsets", "earliest")
            .option("maxOffsetsPerTrigger", n.path("maxOffsetsPerTrigger").asText("10")).load();
        Dataset<Row> out;
        if (n.has("dropDuplicates")) {
          out = df.selectExpr(texts(n.get("select"))).dropDuplicates(texts(n.get("dropDuplicates")));
        } else {
          Column[] aggs = exprs(n.get("agg"));
          Column[] rest = new Column[aggs.length - 1];
          System.arraycopy(aggs, 1, rest, 0, rest.length);
          out = df.groupBy(exprs(n.get("groupBy"))).agg(aggs[0], rest);
        }
        if (n.has("project")) out = out.selectExpr(texts(n.get("project")));
        q = out.writeStream().format("kafka")
            .option("kafka.bootstrap.servers", n.get("bootstrap").asText())
            .option("topic", n.get("outTopic").asText())
            .option("checkpointLocation", n.get("checkpoint").asText())
            .outputMode(n.path("outputMode").asText("update"))
            .trigger(Trigger.AvailableNow()).start();
        if (!q.awaitTermination(180_000)) {
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
      if (q != null) {
        for (StreamingQueryProgress p : q.recentProgress()) {
          if (p.durationMs().containsKey("addBatch")) batches.add(p.batchId());
        }
      }
      Files.write(Paths.get(result), M.writeValueAsBytes(res));
      System.out.println("done\t" + result);
    }
    spark.stop();
  }
}

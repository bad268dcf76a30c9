// Restarts the stateful queries of the state fixtures (testdata/spark-state, written by
// scripts/spark-state-fixtures.py) on a (possibly damaged) copy of their checkpoint, and reports
// what Spark did, as spark/restart does for Kafka queries (Restart.describe: top exception, root
// cause, error class, the chain).
//
//   StateDamage < cases      one JSON object per line:
//   {"name":..,"checkpoint":..,"input":DIR,"query":"agg"|"dedup","conf":{"K":"V"},"timeoutMs":120000}
// INPUT is the file source's directory (the caller puts the new batch's JSON file there, so that
// the restart has a batch to run). CONF is the fixture's session conf (conf.json): the changelog
// setting is not in the offset log. One result line per case, with "case": name.

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.functions;
import org.apache.spark.sql.streaming.StreamingQuery;
import org.apache.spark.sql.streaming.StreamingQueryProgress;
import org.apache.spark.sql.streaming.Trigger;

public class StateDamage {
  static final ObjectMapper M = new ObjectMapper();
  static final String SCHEMA =
      "k string, b int, x long, d double, s string, flag boolean, ts timestamp, day date, amt decimal(10,2)";

  public static void main(String[] args) throws Exception {
    PrintStream out = new PrintStream(new java.io.FileOutputStream(java.io.FileDescriptor.out), true, "UTF-8");
    System.setOut(System.err);
    // The fixtures' session (scripts/spark-state-fixtures.py), one task at a time.
    SparkSession spark = SparkSession.builder().master("local[1]").appName("ckpt-state-damage")
        .config("spark.ui.enabled", "false").config("spark.driver.host", "127.0.0.1")
        .config("spark.sql.shuffle.partitions", "2").config("spark.sql.session.timeZone", "UTC")
        .config("spark.sql.streaming.stateStore.minDeltasForSnapshot", "2")
        .config("spark.sql.streaming.minBatchesToRetain", "100").getOrCreate();
    spark.sparkContext().setLogLevel("ERROR");
    BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
    for (String line; (line = in.readLine()) != null; ) {
      if (line.isBlank()) continue;
      JsonNode c = M.readTree(line);
      ObjectNode res = M.createObjectNode();
      res.put("case", c.path("name").asText());
      res.put("spark", spark.version());
      List<String> confs = new ArrayList<>();
      Iterator<Map.Entry<String, JsonNode>> it = c.path("conf").fields();
      while (it.hasNext()) {
        Map.Entry<String, JsonNode> e = it.next();
        spark.conf().set(e.getKey(), e.getValue().asText());
        confs.add(e.getKey());
      }
      StreamingQuery q = null;
      Throwable failure = null;
      try {
        Dataset<Row> src = spark.readStream().schema(SCHEMA).option("maxFilesPerTrigger", 1)
            .json(c.path("input").asText());
        Dataset<Row> df;
        String mode;
        switch (c.path("query").asText()) {
          case "agg":
            df = src.groupBy("k", "b").agg(functions.count(functions.lit(1)).alias("n"),
                functions.sum("x").alias("sx"), functions.avg("d").alias("ad"), functions.max("s").alias("ms"),
                functions.min("ts").alias("mts"), functions.max("day").alias("mday"),
                functions.sum("amt").alias("samt"), functions.max("flag").alias("mflag"));
            mode = "update";
            break;
          case "dedup":
            df = src.dropDuplicates("k", "b");
            mode = "append";
            break;
          default:
            throw new IllegalArgumentException("unknown query " + c.path("query").asText() + ": want agg or dedup");
        }
        q = df.writeStream().format("noop").outputMode(mode)
            .option("checkpointLocation", c.path("checkpoint").asText())
            .trigger(Trigger.AvailableNow()).start();
        if (!q.awaitTermination(c.path("timeoutMs").asLong(120_000))) {
          q.stop();
          res.put("timedOut", true);
        }
        if (q.exception().isDefined()) failure = q.exception().get();
      } catch (Throwable t) {
        failure = t;
      } finally {
        for (String k : confs) spark.conf().unset(k);
        for (StreamingQuery a : spark.streams().active()) a.stop();
      }
      if (failure != null) {
        res.put("outcome", "error");
        Restart.describe(res, failure);
      } else {
        res.put("outcome", "ok");
        res.putNull("errorClass");
        res.putNull("error");
      }
      ArrayNode batches = res.putArray("batches");
      if (q != null) {
        Long last = null;
        for (StreamingQueryProgress p : q.recentProgress()) {
          if (!p.durationMs().containsKey("addBatch") || (last != null && p.batchId() == last)) continue;
          last = p.batchId();
          batches.add(p.batchId());
        }
      }
      out.println(M.writeValueAsString(res));
      out.flush();
    }
    spark.stop();
    System.exit(0);
  }
}

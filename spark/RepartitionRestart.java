// Restarts the stateful queries of testdata/spark-state (scripts/spark-state-fixtures.py) on
// their checkpoints over more input, with Spark's own engine: the oracle of
// `ckpt state repartition` (a repartitioned checkpoint must give exactly the output of the one
// that was not).
//
//   RepartitionRestart < requests      one request per line, tab-separated:
//   QUERY <TAB> CHECKPOINT <TAB> INPUT_DIR <TAB> OUTPUT_FILE
//   QUERY <TAB> CHECKPOINT <TAB> INPUT_DIR <TAB> OUTPUT_FILE <TAB> CONF   (CONF: k=v,k=v, set on a
//                                                                   new session for that request)
// QUERY is agg, dedup or join (the fixture script's queries), window (a count per week window
// and key, watermark 1 day) or fmgws (mapGroupsWithState: a running sum per key). The query runs with
// Trigger.AvailableNow, one input file per batch, into foreachBatch; OUTPUT_FILE gets every
// row it emitted as sorted JSON lines, OUTPUT_FILE.partitions the shuffle partitions of each
// batch's first stateful operator. A request that fails writes OUTPUT_FILE.error.

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import org.apache.spark.api.java.function.MapFunction;
import org.apache.spark.api.java.function.MapGroupsWithStateFunction;
import org.apache.spark.api.java.function.VoidFunction2;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Encoders;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.functions;
import org.apache.spark.sql.streaming.StreamingQuery;
import org.apache.spark.sql.streaming.StreamingQueryProgress;
import org.apache.spark.sql.streaming.Trigger;

public class RepartitionRestart {
  static final String SCHEMA = "k string, b int, x long, d double, s string, flag boolean, ts timestamp, day date, amt decimal(10,2)";

  static Dataset<Row> src(SparkSession spark, String dir) {
    return spark.readStream().schema(SCHEMA).option("maxFilesPerTrigger", 1).json(dir);
  }

  public static void main(String[] args) throws Exception {
    SparkSession base = SparkSession.builder().master("local[1]").appName("ckpt-repartition")
        .config("spark.ui.enabled", "false").config("spark.sql.session.timeZone", "UTC")
        .config("spark.sql.shuffle.partitions", "2").getOrCreate();
    base.sparkContext().setLogLevel("ERROR");
    BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
    for (String line; (line = in.readLine()) != null; ) {
      if (line.isEmpty()) continue;
      String[] f = line.split("\t");
      SparkSession spark = base;
      if (f.length > 4 && !f[4].isEmpty()) {
        spark = base.newSession();
        for (String kv : f[4].split(",")) {
          String[] p = kv.split("=", 2);
          spark.conf().set(p[0], p[1]);
        }
      }
      try {
        Dataset<Row> df;
        String mode;
        switch (f[0]) {
          case "agg":
            df = src(spark, f[2] + "/a").groupBy("k", "b").agg(
                functions.count(functions.lit(1)).alias("n"), functions.sum("x").alias("sx"),
                functions.avg("d").alias("ad"), functions.max("s").alias("ms"),
                functions.min("ts").alias("mts"), functions.max("day").alias("mday"),
                functions.sum("amt").alias("samt"), functions.max("flag").alias("mflag"));
            mode = "update";
            break;
          case "dedup":
            df = src(spark, f[2] + "/a").dropDuplicates(new String[] {"k", "b"});
            mode = "append";
            break;
          case "join":
            Dataset<Row> left = src(spark, f[2] + "/a").select(functions.col("k").alias("lk"),
                functions.col("x").alias("lx"), functions.col("s").alias("ls"));
            Dataset<Row> right = src(spark, f[2] + "/b").select(functions.col("k").alias("rk"),
                functions.col("x").alias("rx"));
            df = left.join(right, functions.expr("lk = rk"));
            mode = "append";
            break;
          case "window":
            df = src(spark, f[2] + "/a").withWatermark("ts", "1 day")
                .groupBy(functions.window(functions.col("ts"), "7 days"), functions.col("k"))
                .agg(functions.count(functions.lit(1)).alias("n"), functions.sum("x").alias("sx"));
            mode = "update";
            break;
          case "fmgws":
            df = src(spark, f[2] + "/a")
                .groupByKey((MapFunction<Row, String>) r -> r.getString(0), Encoders.STRING())
                .mapGroupsWithState((MapGroupsWithStateFunction<String, Row, Long, String>) (key, it, st) -> {
                  long c = st.exists() ? st.get() : 0L;
                  while (it.hasNext()) {
                    c += it.next().getLong(2);
                  }
                  st.update(c);
                  return key + ":" + c;
                }, Encoders.LONG(), Encoders.STRING()).toDF();
            mode = "update";
            break;
          default:
            throw new IllegalArgumentException("query " + f[0]);
        }
        List<String> rows = Collections.synchronizedList(new ArrayList<>());
        StreamingQuery q = df.writeStream().outputMode(mode)
            .foreachBatch((VoidFunction2<Dataset<Row>, Long>) (batch, id) -> rows.addAll(batch.toJSON().collectAsList()))
            .option("checkpointLocation", f[1]).trigger(Trigger.AvailableNow()).start();
        q.awaitTermination();
        Collections.sort(rows);
        Files.write(Paths.get(f[3]), rows, StandardCharsets.UTF_8);
        List<String> parts = new ArrayList<>();
        for (StreamingQueryProgress p : q.recentProgress()) {
          if (p.stateOperators().length > 0) {
            parts.add(p.batchId() + "\t" + p.stateOperators()[0].numShufflePartitions());
          }
        }
        Files.write(Paths.get(f[3] + ".partitions"), parts, StandardCharsets.UTF_8);
      } catch (Exception e) {
        String msg = String.valueOf(e.getMessage()).split("\n", 2)[0];
        Files.write(Paths.get(f[3] + ".error"), (e.getClass().getName() + ": " + msg + "\n").getBytes(StandardCharsets.UTF_8));
      }
      System.out.println("done\t" + f[3]);
    }
    base.stop();
  }
}

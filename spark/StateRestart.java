// Restarts a stateful query of testdata/spark-state (scripts/spark-state-fixtures.py) on a copy
// of its checkpoint with the installed Spark release, one new input file so that a batch runs,
// and prints what happened as one JSON object (the goldens of the damaged-state cases).
//
//   StateRestart < requests      one request per line, tab-separated:
//   NAME <TAB> CHECKPOINT <TAB> QUERY (agg|agg-ntz|dedup) <TAB> INPUT_DIR [<TAB> CONF_KEY=VALUE ...]
//
// Every request answers with one line: {"case","spark","outcome":"ok"|"error","topException",
// "topMessage","exception","error","errorClass","chain":[{"exception","message","errorClass"}]}.
// The messages are Spark's whole messages (several lines); paths are left to the caller.

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.List;
import org.apache.spark.sql.Column;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.streaming.StreamingQuery;
import static org.apache.spark.sql.functions.*;

public class StateRestart {
  static final String SCHEMA =
      "k string, b int, x long, d double, s string, flag boolean, ts timestamp, day date, amt decimal(10,2)";

  public static void main(String[] args) throws Exception {
    SparkSession spark = SparkSession.builder().master("local[1]").appName("ckpt-state-restart")
        .config("spark.ui.enabled", "false").config("spark.sql.session.timeZone", "UTC")
        .config("spark.sql.shuffle.partitions", "2").getOrCreate();
    spark.sparkContext().setLogLevel("ERROR");
    BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
    for (String line; (line = in.readLine()) != null; ) {
      if (line.isEmpty()) continue;
      String[] f = line.split("\t");
      List<String> confs = new ArrayList<>();
      for (int i = 4; i < f.length; i++) {
        String[] kv = f[i].split("=", 2);
        spark.conf().set(kv[0], kv[1]);
        confs.add(kv[0]);
      }
      StringBuilder out = new StringBuilder("{\"case\":").append(q(f[0]))
          .append(",\"spark\":").append(q(spark.version()));
      try {
        Path inp = Paths.get(f[3], "a");
        Files.createDirectories(inp);
        Files.write(inp.resolve("5.json"), List.of(
            "{\"k\":\"k1\",\"b\":1,\"x\":51,\"d\":1.5,\"s\":\"v5-1\",\"flag\":true,\"ts\":\"2024-01-06T00:00:01.123Z\",\"day\":\"2024-02-02\",\"amt\":\"5.01\"}",
            "{\"k\":\"new5\",\"b\":0,\"x\":5,\"d\":0.5}"), StandardCharsets.UTF_8);
        Dataset<Row> src = spark.readStream().schema(SCHEMA).option("maxFilesPerTrigger", 1).json(inp.toString());
        Dataset<Row> df;
        String mode;
        switch (f[2]) {
          case "agg":
            df = src.groupBy("k", "b").agg(count(lit(1)).alias("n"), sum("x").alias("sx"),
                avg("d").alias("ad"), max("s").alias("ms"), min("ts").alias("mts"),
                max("day").alias("mday"), sum("amt").alias("samt"), max("flag").alias("mflag"));
            mode = "update";
            break;
          case "agg-ntz": {
            Column ntz = col("ts").cast("timestamp_ntz");
            df = src.groupBy(col("k"), date_trunc("hour", ntz).cast("timestamp_ntz").alias("hour"))
                .agg(min(ntz).alias("first"), max(ntz).alias("last"));
            mode = "update";
            break;
          }
          case "dedup":
            df = src.dropDuplicates(new String[] {"k", "b"});
            mode = "append";
            break;
          default:
            throw new IllegalArgumentException("query " + f[2]);
        }
        StreamingQuery sq = df.writeStream().format("noop").outputMode(mode)
            .option("checkpointLocation", f[1]).start();
        try {
          sq.processAllAvailable();
        } finally {
          sq.stop();
        }
        if (sq.exception().isDefined()) throw sq.exception().get();
        out.append(",\"outcome\":\"ok\"");
      } catch (Throwable t) {
        out.append(",\"outcome\":\"error\"");
        List<Throwable> chain = new ArrayList<>();
        for (Throwable x = t; x != null && !chain.contains(x); x = x.getCause()) chain.add(x);
        Throwable root = chain.get(chain.size() - 1);
        String ec = null;
        for (int i = chain.size() - 1; i >= 0 && ec == null; i--) {
          String c = errorClassOf(chain.get(i));
          if (c != null && !c.equals("STREAM_FAILED")) ec = c;
        }
        out.append(",\"topException\":").append(q(t.getClass().getName()))
            .append(",\"topMessage\":").append(q(t.getMessage()))
            .append(",\"exception\":").append(q(root.getClass().getName()))
            .append(",\"error\":").append(q(root.getMessage()))
            .append(",\"errorClass\":").append(q(ec)).append(",\"chain\":[");
        for (int i = 0; i < chain.size(); i++) {
          Throwable x = chain.get(i);
          out.append(i == 0 ? "" : ",").append("{\"exception\":").append(q(x.getClass().getName()))
              .append(",\"message\":").append(q(x.getMessage()))
              .append(",\"errorClass\":").append(q(errorClassOf(x))).append("}");
        }
        out.append("]");
      }
      for (String k : confs) spark.conf().unset(k);
      System.out.println(out.append("}"));
      System.out.flush();
    }
    spark.stop();
  }

  static String errorClassOf(Throwable t) {
    for (String m : new String[] {"getCondition", "getErrorClass"}) {
      try {
        Object v = t.getClass().getMethod(m).invoke(t);
        if (v != null) return v.toString();
      } catch (ReflectiveOperationException e) {
        // not a SparkThrowable, or the method is not there on this release
      }
    }
    return null;
  }

  static String q(String s) {
    if (s == null) return "null";
    StringBuilder b = new StringBuilder("\"");
    for (char c : s.toCharArray()) {
      switch (c) {
        case '"': b.append("\\\""); break;
        case '\\': b.append("\\\\"); break;
        case '\n': b.append("\\n"); break;
        case '\r': b.append("\\r"); break;
        case '\t': b.append("\\t"); break;
        default:
          if (c < 0x20) b.append(String.format("\\u%04x", (int) c));
          else b.append(c);
      }
    }
    return b.append('"').toString();
  }
}

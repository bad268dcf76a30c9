// Reads state stores with Spark's own reader (spark.read.format("statestore"), Spark 4.0+) and
// writes each reading as sorted JSON lines: the oracle of ckpt's state writer tests.
//
//   StateRead < requests      one request per line, tab-separated:
//   CHECKPOINT <TAB> OPERATOR_ID <TAB> STORE_NAME <TAB> OUTPUT_FILE [<TAB> CHANGES_BATCH [<TAB> CONF]]
// With CHANGES_BATCH (may be empty) the reading is the change feed of that batch (readChangeFeed).
// CONF is KEY=VALUE pairs separated by ';' set for that request only (a checkpoint of format v2
// needs spark.sql.streaming.stateStore.checkpointFormatVersion=2 to read its commit log). A request
// that fails writes OUTPUT_FILE.error with the exception's first line; the others go on.

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import org.apache.spark.sql.DataFrameReader;
import org.apache.spark.sql.SparkSession;

public class StateRead {
  public static void main(String[] args) throws Exception {
    SparkSession spark = SparkSession.builder().master("local[1]").appName("ckpt-state-read")
        .config("spark.ui.enabled", "false").config("spark.sql.session.timeZone", "UTC")
        .config("spark.sql.shuffle.partitions", "2").getOrCreate();
    spark.sparkContext().setLogLevel("ERROR");
    // Spark 4.1's reader asks the state store coordinator, which starts with the streaming
    // query manager.
    spark.streams();
    BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
    for (String line; (line = in.readLine()) != null; ) {
      if (line.isEmpty()) continue;
      String[] f = line.split("\t");
      DataFrameReader r = spark.read().format("statestore")
          .option("operatorId", Integer.parseInt(f[1])).option("storeName", f[2]);
      List<String> confs = new ArrayList<>();
      if (f.length > 5) {
        for (String kv : f[5].split(";")) {
          String[] p = kv.split("=", 2);
          spark.conf().set(p[0], p[1]);
          confs.add(p[0]);
        }
      }
      if (f.length > 4 && !f[4].isEmpty()) {
        r = r.option("readChangeFeed", "true").option("changeStartBatchId", f[4])
            .option("changeEndBatchId", f[4]);
      }
      try {
        List<String> rows = new ArrayList<>(r.load(f[0]).toJSON().collectAsList());
        Collections.sort(rows);
        Files.write(Paths.get(f[3]), rows, StandardCharsets.UTF_8);
      } catch (Exception e) {
        String msg = String.valueOf(e.getMessage()).split("\n", 2)[0];
        Files.write(Paths.get(f[3] + ".error"), (e.getClass().getName() + ": " + msg + "\n").getBytes(StandardCharsets.UTF_8));
      }
      for (String k : confs) spark.conf().unset(k);
      System.out.println("done\t" + f[3]);
    }
    spark.stop();
  }
}

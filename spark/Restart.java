// The driver of spark/restart: restarts a stateless Kafka query on an existing checkpoint with the
// Spark release on the classpath and reports what Spark did, as one JSON object per case.
//
// Two ways to call it (spark/restart does both):
//   Restart CHECKPOINT --bootstrap-server H:P --output DIR [--sink S] [--trigger T] [--option K=V ...]
//   Restart --cases FILE.jsonl     one case per line, one result per line, all in this JVM
// A case line: {"name":..,"checkpoint":..,"bootstrap":..,"output":..,"sink":"file","trigger":"availableNow",
// "options":{"K":"V"},"timeoutMs":120000}. The contract is in docs/spark-oracle.md.
//
// Options: a key starting with "spark." is a session conf for this case only, "sink.K" is a writer
// option K (asyncProgressTrackingEnabled, topic, ...), any other key is a Kafka source option
// (failOnDataLoss, startingOffsets, subscribe, ...). Without subscribe/assign/subscribePattern the
// topics are the ones the checkpoint's offsets files record.

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.BufferedReader;
import java.io.File;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.util.ArrayList;
import java.util.Collections;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeSet;
import java.util.concurrent.TimeUnit;
import org.apache.logging.log4j.Level;
import org.apache.logging.log4j.LogManager;
import org.apache.logging.log4j.core.LogEvent;
import org.apache.logging.log4j.core.LoggerContext;
import org.apache.logging.log4j.core.appender.AbstractAppender;
import org.apache.logging.log4j.core.config.Configuration;
import org.apache.logging.log4j.core.config.LoggerConfig;
import org.apache.logging.log4j.core.config.Property;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.streaming.DataStreamReader;
import org.apache.spark.sql.streaming.DataStreamWriter;
import org.apache.spark.sql.streaming.SourceProgress;
import org.apache.spark.sql.streaming.StreamingQuery;
import org.apache.spark.sql.streaming.StreamingQueryProgress;
import org.apache.spark.sql.streaming.Trigger;

public class Restart {
  static final ObjectMapper M = new ObjectMapper();

  /** Collects WARN and ERROR lines of the streaming and Kafka loggers for the running case. */
  static final class Capture extends AbstractAppender {
    final List<String> lines = Collections.synchronizedList(new ArrayList<>());

    Capture() {
      super("ckpt-capture", null, null, true, Property.EMPTY_ARRAY);
    }

    @Override
    public void append(LogEvent e) {
      String name = e.getLoggerName() == null ? "" : e.getLoggerName();
      if (!e.getLevel().isMoreSpecificThan(Level.WARN)) return;
      if (!(name.contains(".streaming") || name.contains("kafka010"))) return;
      String simple = name.substring(name.lastIndexOf('.') + 1);
      lines.add(e.getLevel() + " " + simple + ": " + e.getMessage().getFormattedMessage());
    }
  }

  static final class Case {
    String name = "";
    String checkpoint;
    String bootstrap;
    String output;
    String sink = "file";
    String trigger = "availableNow";
    Map<String, String> options = new LinkedHashMap<>();
    long timeoutMs = 120_000;
    boolean countOutput;
  }

  public static void main(String[] args) throws Exception {
    PrintStream out = new PrintStream(new java.io.FileOutputStream(java.io.FileDescriptor.out), true, "UTF-8");
    System.setOut(System.err); // a console sink must not mix with the JSON results
    BufferedReader casesIn = null;
    Case single = null;
    if (args.length == 2 && args[0].equals("--cases")) {
      casesIn = args[1].equals("-")
          ? new BufferedReader(new java.io.InputStreamReader(System.in, StandardCharsets.UTF_8))
          : Files.newBufferedReader(new File(args[1]).toPath(), StandardCharsets.UTF_8);
    } else {
      single = parseArgs(args);
    }

    SparkSession spark = SparkSession.builder()
        .master("local[1]")
        .appName("ckpt-spark-oracle")
        .config("spark.ui.enabled", "false")
        .config("spark.driver.host", "127.0.0.1")
        .config("spark.sql.shuffle.partitions", "1")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.sql.streaming.noDataProgressEventInterval", "3600000")
        .getOrCreate();
    spark.sparkContext().setLogLevel("WARN");
    Capture cap = new Capture();
    cap.start();
    LoggerContext ctx = (LoggerContext) LogManager.getContext(false);
    Configuration cfg = ctx.getConfiguration();
    for (String logger : new String[] {"org.apache.spark.sql.execution.streaming", "org.apache.spark.sql.kafka010",
        "org.apache.spark.sql.execution.streaming.runtime", "org.apache.spark.sql.execution.streaming.checkpointing"}) {
      LoggerConfig lc = new LoggerConfig(logger, Level.WARN, true);
      lc.addAppender(cap, Level.WARN, null);
      cfg.addLogger(logger, lc);
    }
    ctx.updateLoggers();

    while (true) {
      Case c;
      if (single != null) {
        c = single;
      } else {
        String line = casesIn.readLine();
        if (line == null) break;
        if (line.isBlank()) continue;
        c = parseCase(M.readTree(line));
      }
      cap.lines.clear();
      ObjectNode res;
      try {
        res = run(spark, c, cap);
      } catch (Throwable t) {
        res = M.createObjectNode();
        res.put("outcome", "error");
        describe(res, t);
      }
      ObjectNode line = M.createObjectNode();
      if (!c.name.isEmpty()) line.put("case", c.name);
      line.put("spark", spark.version());
      line.setAll(res);
      ArrayNode log = line.putArray("driverLog");
      synchronized (cap.lines) {
        for (String l : cap.lines) log.add(l);
      }
      if (!line.has("batches")) line.putArray("batches");
      out.println(M.writeValueAsString(line));
      out.flush();
      if (single != null) break;
    }
    spark.stop();
    out.flush();
    System.exit(0);
  }

  static Case parseCase(JsonNode n) {
    Case c = new Case();
    c.name = n.path("name").asText("");
    c.checkpoint = n.path("checkpoint").asText();
    c.bootstrap = n.path("bootstrap").asText();
    c.output = n.path("output").asText();
    if (n.hasNonNull("sink")) c.sink = n.get("sink").asText();
    if (n.hasNonNull("trigger")) c.trigger = n.get("trigger").asText();
    if (n.hasNonNull("timeoutMs")) c.timeoutMs = n.get("timeoutMs").asLong();
    c.countOutput = n.path("countOutput").asBoolean(false);
    Iterator<Map.Entry<String, JsonNode>> it = n.path("options").fields();
    while (it.hasNext()) {
      Map.Entry<String, JsonNode> e = it.next();
      c.options.put(e.getKey(), e.getValue().asText());
    }
    return c;
  }

  static Case parseArgs(String[] a) {
    Case c = new Case();
    for (int i = 0; i < a.length; i++) {
      switch (a[i]) {
        case "--bootstrap-server": c.bootstrap = a[++i]; break;
        case "--output": c.output = a[++i]; break;
        case "--sink": c.sink = a[++i]; break;
        case "--trigger": c.trigger = a[++i]; break;
        case "--timeout-ms": c.timeoutMs = Long.parseLong(a[++i]); break;
        case "--count-output": c.countOutput = true; break;
        case "--option": {
          String kv = a[++i];
          int eq = kv.indexOf('=');
          if (eq <= 0) throw new IllegalArgumentException("--option wants K=V, got " + kv);
          c.options.put(kv.substring(0, eq), kv.substring(eq + 1));
          break;
        }
        default:
          if (a[i].startsWith("--") || c.checkpoint != null) throw new IllegalArgumentException("unexpected argument " + a[i]);
          c.checkpoint = a[i];
      }
    }
    if (c.checkpoint == null || c.bootstrap == null || c.output == null) {
      throw new IllegalArgumentException("usage: Restart CHECKPOINT --bootstrap-server HOST:PORT --output DIR "
          + "[--sink file|kafka|console] [--trigger availableNow|once|processingTime=MS] [--option K=V ...]");
    }
    return c;
  }

  /** The topics that the checkpoint's offsets files record for Kafka sources, in name order. */
  static String topicsOf(String checkpoint) {
    TreeSet<String> topics = new TreeSet<>();
    File[] files = new File(checkpoint, "offsets").listFiles();
    if (files == null) return "";
    for (File f : files) {
      if (!f.isFile() || !f.getName().matches("[0-9]+")) continue;
      try {
        List<String> lines = Files.readAllLines(f.toPath(), StandardCharsets.UTF_8);
        for (int i = 2; i < lines.size(); i++) {
          try {
            JsonNode n = M.readTree(lines.get(i));
            if (n == null || !n.isObject()) continue;
            Iterator<Map.Entry<String, JsonNode>> it = n.fields();
            while (it.hasNext()) {
              Map.Entry<String, JsonNode> e = it.next();
              if (e.getValue().isObject()) topics.add(e.getKey());
            }
          } catch (Exception ignored) {
            // not JSON: not a Kafka line
          }
        }
      } catch (Exception ignored) {
        // unreadable file: the restart itself reports it
      }
    }
    return String.join(",", topics);
  }

  static ObjectNode run(SparkSession spark, Case c, Capture cap) throws Exception {
    ObjectNode res = M.createObjectNode();
    List<String> confs = new ArrayList<>();
    DataStreamReader r = spark.readStream().format("kafka").option("kafka.bootstrap.servers", c.bootstrap);
    Map<String, String> sinkOpts = new LinkedHashMap<>();
    boolean hasSubscription = false;
    for (Map.Entry<String, String> e : c.options.entrySet()) {
      String k = e.getKey();
      if (k.startsWith("spark.")) {
        spark.conf().set(k, e.getValue());
        confs.add(k);
      } else if (k.startsWith("sink.")) {
        sinkOpts.put(k.substring(5), e.getValue());
      } else {
        if (k.equals("subscribe") || k.equals("assign") || k.equals("subscribePattern")) hasSubscription = true;
        r = r.option(k, e.getValue());
      }
    }
    try {
      if (!hasSubscription) {
        String topics = topicsOf(c.checkpoint);
        if (topics.isEmpty()) {
          throw new IllegalArgumentException("no Kafka topic in the checkpoint's offsets files: pass --option subscribe=TOPIC");
        }
        r = r.option("subscribe", topics);
      }
      Dataset<Row> df = r.load();
      DataStreamWriter<Row> w;
      switch (c.sink) {
        case "file":
          w = df.selectExpr("CAST(key AS STRING) AS key", "CAST(value AS STRING) AS value", "topic", "partition", "offset")
              .writeStream().format("json").option("path", c.output);
          break;
        case "kafka":
          w = df.selectExpr("key", "value").writeStream().format("kafka").option("kafka.bootstrap.servers", c.bootstrap);
          break;
        case "console":
          w = df.selectExpr("CAST(value AS STRING) AS value", "topic", "partition", "offset").writeStream().format("console");
          break;
        default:
          throw new IllegalArgumentException("unknown sink " + c.sink + ": want file, kafka or console");
      }
      w = w.option("checkpointLocation", c.checkpoint);
      for (Map.Entry<String, String> e : sinkOpts.entrySet()) w = w.option(e.getKey(), e.getValue());
      boolean untilCaughtUp = false;
      if (c.trigger.equals("availableNow")) {
        w = w.trigger(Trigger.AvailableNow());
      } else if (c.trigger.equals("once")) {
        w = w.trigger(Trigger.Once());
      } else if (c.trigger.startsWith("processingTime=")) {
        w = w.trigger(Trigger.ProcessingTime(Long.parseLong(c.trigger.substring(15)), TimeUnit.MILLISECONDS));
        untilCaughtUp = true;
      } else {
        throw new IllegalArgumentException("unknown trigger " + c.trigger + ": want availableNow, once or processingTime=MS");
      }

      // What the logs hold before the run: a batch that runs and then fails before Spark reports its
      // progress (at the commit, or SPARK-55271 after it) is found afterwards by what it wrote.
      File commitsDir = new File(c.checkpoint, "commits");
      File sinkLogDir = c.sink.equals("file") ? new File(c.output, "_spark_metadata") : null;
      Map<String, String> commitsBefore = snapshot(commitsDir);
      Map<String, String> sinkBefore = snapshot(sinkLogDir);

      StreamingQuery q = null;
      Throwable failure = null;
      try {
        q = w.start();
        if (untilCaughtUp) {
          long deadline = System.currentTimeMillis() + c.timeoutMs;
          while (q.isActive() && System.currentTimeMillis() < deadline) {
            Thread.sleep(200);
            if (q.recentProgress().length > 0 && !q.status().isDataAvailable() && !q.status().isTriggerActive()) break;
          }
          if (q.isActive()) q.stop();
        } else if (!q.awaitTermination(c.timeoutMs)) {
          q.stop();
          res.put("timedOut", true);
        }
        if (q.exception().isDefined()) failure = q.exception().get();
      } catch (Throwable t) {
        failure = t;
      }
      if (failure != null) {
        res.put("outcome", "error");
        describe(res, failure);
      } else {
        res.put("outcome", "ok");
        res.putNull("errorClass");
        res.putNull("error");
      }
      ArrayNode batches = res.putArray("batches");
      if (q != null) {
        if (q.isActive()) q.stop();
        // No sentinel id: Long.MIN_VALUE is a real batch id after 2^63-1 wraps.
        Long last = null;
        for (StreamingQueryProgress p : q.recentProgress()) {
          // A trigger without data also reports progress, with the next batch id: only executed batches count.
          if (!p.durationMs().containsKey("addBatch")) continue;
          if (last != null && p.batchId() == last) continue;
          last = p.batchId();
          ObjectNode b = batches.addObject();
          b.put("id", p.batchId());
          ArrayNode srcs = b.putArray("sources");
          for (SourceProgress s : p.sources()) {
            ObjectNode so = srcs.addObject();
            so.set("startOffset", jsonOf(s.startOffset()));
            so.set("endOffset", jsonOf(s.endOffset()));
            so.put("numInputRows", s.numInputRows());
          }
        }
        if (failure != null) addUnreported(batches, c, commitsDir, commitsBefore, sinkLogDir, sinkBefore);
      }
      if (c.countOutput && c.sink.equals("file")) {
        // spark.read of a file sink's output lists files through _spark_metadata.
        Dataset<Row> o = spark.read().format("json").load(c.output);
        ObjectNode oc = res.putObject("output");
        oc.put("rows", o.count());
        oc.put("distinct", o.select("topic", "partition", "offset").distinct().count());
      }
    } finally {
      for (String k : confs) spark.conf().unset(k);
      for (StreamingQuery a : spark.streams().active()) a.stop();
    }
    return res;
  }

  /** Each batch file of dir (numeric names) with its size, modification time and content. */
  static Map<String, String> snapshot(File dir) {
    Map<String, String> m = new LinkedHashMap<>();
    File[] files = dir == null ? null : dir.listFiles();
    if (files == null) return m;
    for (File f : files) {
      if (!f.isFile() || !f.getName().matches("-?[0-9]+")) continue;
      try {
        m.put(f.getName(), f.length() + ":" + f.lastModified() + ":" + new String(Files.readAllBytes(f.toPath()), StandardCharsets.UTF_8));
      } catch (Exception e) {
        m.put(f.getName(), "unreadable");
      }
    }
    return m;
  }

  /** The ids whose file in dir the run wrote (new or changed since before). */
  static TreeSet<Long> written(File dir, Map<String, String> before) {
    TreeSet<Long> ids = new TreeSet<>();
    for (Map.Entry<String, String> e : snapshot(dir).entrySet()) {
      if (!e.getValue().equals(before.get(e.getKey()))) ids.add(Long.parseLong(e.getKey()));
    }
    return ids;
  }

  /**
   * Adds the batches the failed run executed without a progress event: those whose commit or file
   * sink log entry the run wrote. Spark reports progress only after the commit (finishTrigger), so
   * a batch that fails at its commit (the commit file is there already) or after it (SPARK-55271)
   * is missing from recentProgress although its output was written. Offsets come from the offsets
   * log (end: offsets/N; start: the nearest lower offsets file, none for batch 0, as the progress
   * of batch 0 reports none); rows from the data files the sink log lists, absent without one.
   */
  static void addUnreported(ArrayNode batches, Case c, File commitsDir, Map<String, String> commitsBefore,
      File sinkLogDir, Map<String, String> sinkBefore) {
    TreeSet<Long> reported = new TreeSet<>();
    for (JsonNode b : batches) reported.add(b.get("id").asLong());
    TreeSet<Long> commits = written(commitsDir, commitsBefore);
    TreeSet<Long> sink = written(sinkLogDir, sinkBefore);
    TreeSet<Long> ids = new TreeSet<>(commits);
    ids.addAll(sink);
    ids.removeAll(reported);
    File offsetsDir = new File(c.checkpoint, "offsets");
    TreeSet<Long> offsetIds = new TreeSet<>();
    File[] files = offsetsDir.listFiles();
    if (files != null) {
      for (File f : files) {
        if (f.isFile() && f.getName().matches("-?[0-9]+")) offsetIds.add(Long.parseLong(f.getName()));
      }
    }
    for (long id : ids) {
      ObjectNode b = batches.addObject();
      b.put("id", id);
      b.put("recordedFrom", "checkpoint");
      b.put("commitWritten", commits.contains(id));
      b.put("sinkLogWritten", sink.contains(id));
      List<String> end = sourceLines(new File(offsetsDir, Long.toString(id)));
      Long prev = id == Long.MIN_VALUE ? null : offsetIds.lower(id);
      List<String> start = prev == null || id == 0 ? null : sourceLines(new File(offsetsDir, Long.toString(prev)));
      Long rows = sink.contains(id) ? sinkRows(new File(sinkLogDir, Long.toString(id))) : null;
      ArrayNode srcs = b.putArray("sources");
      for (int i = 0; i < end.size(); i++) {
        ObjectNode so = srcs.addObject();
        so.set("startOffset", start == null || i >= start.size() ? M.nullNode() : jsonOf(start.get(i)));
        so.set("endOffset", jsonOf(end.get(i)));
        if (rows != null && end.size() == 1) so.put("numInputRows", rows);
      }
    }
    // Keep the batches in id order (the progress events come first, and are in order).
    List<JsonNode> all = new ArrayList<>();
    batches.forEach(all::add);
    all.sort((x, y) -> Long.compare(x.get("id").asLong(), y.get("id").asLong()));
    batches.removeAll();
    all.forEach(batches::add);
  }

  /** The source lines of an offsets file (after the version and metadata lines). */
  static List<String> sourceLines(File f) {
    try {
      List<String> lines = Files.readAllLines(f.toPath(), StandardCharsets.UTF_8);
      return lines.size() > 2 ? lines.subList(2, lines.size()) : new ArrayList<>();
    } catch (Exception e) {
      return new ArrayList<>();
    }
  }

  /** The rows of the data files a file sink log entry lists (one JSON line per row), or null. */
  static Long sinkRows(File entry) {
    try {
      List<String> lines = Files.readAllLines(entry.toPath(), StandardCharsets.UTF_8);
      long rows = 0;
      for (int i = 1; i < lines.size(); i++) {
        JsonNode n = M.readTree(lines.get(i));
        String path = n.path("path").asText();
        File data = new File(new java.net.URI(path));
        try (java.util.stream.Stream<String> s = Files.lines(data.toPath(), StandardCharsets.UTF_8)) {
          rows += s.filter(l -> !l.isEmpty()).count();
        }
      }
      return rows;
    } catch (Exception e) {
      return null;
    }
  }

  static JsonNode jsonOf(String s) {
    if (s == null) return M.nullNode();
    try {
      return M.readTree(s);
    } catch (Exception e) {
      return M.getNodeFactory().textNode(s);
    }
  }

  /** Root cause message and class, the top exception, and the error class of the deepest SparkThrowable. */
  static void describe(ObjectNode res, Throwable t) {
    Throwable root = t;
    List<Throwable> chain = new ArrayList<>();
    for (Throwable x = t; x != null && !chain.contains(x); x = x.getCause()) {
      chain.add(x);
      root = x;
    }
    String errorClass = null;
    for (int i = chain.size() - 1; i >= 0 && errorClass == null; i--) {
      String ec = errorClassOf(chain.get(i));
      if (ec != null && !ec.equals("STREAM_FAILED")) errorClass = ec;
    }
    if (errorClass == null) errorClass = errorClassOf(t);
    res.put("errorClass", errorClass);
    res.put("error", root.getMessage());
    res.put("exception", root.getClass().getName());
    ArrayNode causes = res.putArray("causes");
    for (Throwable x : chain) causes.add(x.getMessage() == null ? "" : x.getMessage());
    // The whole chain with each exception's class and error class, outermost first.
    ArrayNode chainOut = res.putArray("chain");
    for (Throwable x : chain) {
      ObjectNode e = chainOut.addObject();
      e.put("exception", x.getClass().getName());
      e.put("message", x.getMessage() == null ? "" : x.getMessage());
      e.put("errorClass", errorClassOf(x));
    }
    res.put("topException", t.getClass().getName());
    String top = t.getMessage() == null ? "" : t.getMessage();
    int nl = top.indexOf('\n');
    res.put("topMessage", nl < 0 ? top : top.substring(0, nl));
  }

  static String errorClassOf(Throwable t) {
    for (String m : new String[] {"getCondition", "getErrorClass"}) {
      try {
        Object v = t.getClass().getMethod(m).invoke(t);
        if (v != null) return v.toString();
      } catch (Exception ignored) {
        // not a SparkThrowable, or a release without this method
      }
    }
    return null;
  }
}

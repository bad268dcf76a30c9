// Reads RocksDB files with the RocksDB in Spark's classpath (rocksdbjni): the oracle of ckpt's
// SST and MANIFEST writers.
//
//   RocksRead < requests      one request per line, tab-separated:
//   SST <TAB> FILE <TAB> OUTPUT_FILE    SstFileReader: checksums verified, then every live entry
//   DB  <TAB> DIR  <TAB> OUTPUT_FILE    the database in DIR (CURRENT, MANIFEST, SST files) opened
//                                       read-only, every live entry
// OUTPUT_FILE gets one line per entry, "hex(key) <TAB> hex(value)", in RocksDB's order, then
// "# entries N" (SST: the table property rocksdb.num.entries; DB: rocksdb.estimate-num-keys is
// not exact, so the count of live keys). A request that fails writes OUTPUT_FILE.error with the
// exception's first line; the others go on.

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.List;
import org.rocksdb.Options;
import org.rocksdb.ReadOptions;
import org.rocksdb.RocksDB;
import org.rocksdb.RocksIterator;
import org.rocksdb.SstFileReader;
import org.rocksdb.SstFileReaderIterator;

public class RocksRead {
  public static void main(String[] args) throws Exception {
    RocksDB.loadLibrary();
    BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
    for (String line; (line = in.readLine()) != null; ) {
      if (line.isEmpty()) continue;
      String[] f = line.split("\t");
      List<String> out = new ArrayList<>();
      try (Options opts = new Options(); ReadOptions ro = new ReadOptions()) {
        if (f[0].equals("SST")) {
          try (SstFileReader r = new SstFileReader(opts)) {
            r.open(f[1]);
            r.verifyChecksum();
            try (SstFileReaderIterator it = r.newIterator(ro)) {
              for (it.seekToFirst(); it.isValid(); it.next()) out.add(hex(it.key()) + "\t" + hex(it.value()));
              it.status();
            }
            out.add("# entries " + r.getTableProperties().getNumEntries());
          }
        } else if (f[0].equals("DB")) {
          opts.setParanoidChecks(true);
          try (RocksDB db = RocksDB.openReadOnly(opts, f[1])) {
            try (RocksIterator it = db.newIterator(ro)) {
              int n = 0;
              for (it.seekToFirst(); it.isValid(); it.next(), n++) out.add(hex(it.key()) + "\t" + hex(it.value()));
              it.status();
              out.add("# entries " + n);
            }
          }
        } else {
          throw new IllegalArgumentException("request " + f[0]);
        }
        Files.write(Paths.get(f[2]), out, StandardCharsets.UTF_8);
      } catch (Exception e) {
        String msg = String.valueOf(e.getMessage()).split("\n", 2)[0];
        Files.write(Paths.get(f[2] + ".error"), (e.getClass().getName() + ": " + msg + "\n").getBytes(StandardCharsets.UTF_8));
      }
      System.out.println("done\t" + f[2]);
    }
  }

  static String hex(byte[] b) {
    StringBuilder s = new StringBuilder(2 * b.length);
    for (byte x : b) s.append(String.format("%02x", x & 0xff));
    return s.toString();
  }
}

import java.io.File;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.hdfs.MiniDFSCluster;

/**
 * A one-DataNode HDFS for ckpt's tests (.ci/hdfs.sh): NameNode RPC and HTTP (WebHDFS) on
 * 127.0.0.1 on free ports, data under args[0]. Prints "READY <httpPort> <rpcPort>" once the
 * cluster is up and runs until killed.
 */
public class MiniHdfs {
  public static void main(String[] args) throws Exception {
    Configuration conf = new Configuration();
    conf.set(MiniDFSCluster.HDFS_MINIDFS_BASEDIR, new File(args[0]).getAbsolutePath());
    conf.setBoolean("dfs.webhdfs.enabled", true);
    conf.set("dfs.namenode.http-address", "127.0.0.1:0");
    conf.set("dfs.datanode.hostname", "127.0.0.1");
    conf.setBoolean("dfs.datanode.use.datanode.hostname", true);
    conf.setInt("dfs.replication", 1);
    // No permission checks: tests write as whichever user they run as.
    conf.setBoolean("dfs.permissions.enabled", false);
    MiniDFSCluster cluster = new MiniDFSCluster.Builder(conf).numDataNodes(1).nameNodePort(0).nameNodeHttpPort(0).build();
    cluster.waitActive();
    Runtime.getRuntime().addShutdownHook(new Thread(cluster::shutdown));
    System.out.println("READY " + cluster.getNameNode().getHttpAddress().getPort() + " " + cluster.getNameNodePort());
    System.out.flush();
    Thread.currentThread().join();
  }
}

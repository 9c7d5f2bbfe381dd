import java.io.File;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.hdfs.MiniDFSCluster;

/**
 * A real HDFS on one machine, for users without a cluster ({@code python -m spark_jobs.minihdfs}) and
 * the tests' {@code hdfs} fixture: Hadoop's own MiniDFSCluster, one NameNode and N DataNodes on free
 * ports on 127.0.0.1, WebHDFS on, as Hudi's HdfsTestService runs it.
 * Prints one line `MINIHDFS {json}` with the addresses once the DataNodes are up, then runs
 * until the process is killed (SIGTERM shuts the cluster down; spark_jobs.minihdfs stops it by PID) or
 * its stdin ends.
 *
 * Usage: java -cp "jars/*:." MiniHdfs BASE_DIR [DATANODES]
 */
public final class MiniHdfs {
  public static void main(String[] args) throws Exception {
    File base = new File(args[0]);
    int dataNodes = args.length > 1 ? Integer.parseInt(args[1]) : 2;
    Configuration conf = new Configuration();
    conf.set(MiniDFSCluster.HDFS_MINIDFS_BASEDIR, base.getAbsolutePath());
    conf.setBoolean("dfs.webhdfs.enabled", true);
    // Replicas on every DataNode: a commit file is then on both, as on a real cluster.
    conf.setInt("dfs.replication", Math.min(dataNodes, 2));
    // Small blocks keep the DataNodes' disk use down; a test table's files are small anyway.
    conf.setLong("dfs.blocksize", 1L << 20);
    conf.setLong("dfs.namenode.fs-limits.min-block-size", 1L << 16);
    // Every address on the loopback, on a free port (0), so runs never collide.
    conf.set("dfs.datanode.hostname", "127.0.0.1");
    conf.setBoolean("dfs.client.use.datanode.hostname", true);
    MiniDFSCluster cluster = new MiniDFSCluster.Builder(conf, base)
        .numDataNodes(dataNodes)
        .nameNodePort(0)
        .nameNodeHttpPort(0)
        .format(true)
        .build();
    cluster.waitActive();
    Runtime.getRuntime().addShutdownHook(new Thread(cluster::shutdown));
    int rpc = cluster.getNameNodePort();
    int http = cluster.getNameNode().getHttpAddress().getPort();
    StringBuilder dn = new StringBuilder();
    for (int i = 0; i < cluster.getDataNodes().size(); i++) {
      dn.append(i == 0 ? "" : ",").append(cluster.getDataNodes().get(i).getInfoPort());
    }
    System.out.println("MINIHDFS {\"rpc_port\": " + rpc + ", \"http_port\": " + http
        + ", \"uri\": \"hdfs://127.0.0.1:" + rpc + "\", \"datanode_http_ports\": [" + dn + "]}");
    System.out.flush();
    // Runs until killed, or until the process that started it is gone (its stdin ends), so a test
    // run that dies never leaves a NameNode behind. System.exit runs the shutdown hook.
    while (System.in.read() != -1) {
      // nothing is sent; the read only waits
    }
    System.exit(0);
  }
}

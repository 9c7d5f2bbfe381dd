package tableformat.log;

import java.io.FileNotFoundException;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.net.URI;
import java.util.ArrayList;
import java.util.List;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;

/**
 * The table's files through Hadoop's FileSystem (local paths, file:, s3a:, hdfs:), relative to
 * the table root, as the log names them (§1).
 */
public final class LogStore {
  private final String root;
  private final FileSystem fs;

  public LogStore(String uri, Configuration conf) {
    String u = uri.contains("://") || uri.startsWith("file:") ? uri : "file://" + new java.io.File(uri).getAbsolutePath();
    if (u.startsWith("s3://")) u = "s3a://" + u.substring(5);
    this.root = u.endsWith("/") ? u.substring(0, u.length() - 1) : u;
    try {
      this.fs = FileSystem.get(URI.create(root + "/"), conf);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  /** The URI the JVM opens a table file by. */
  public String uri(String rel) {
    return root + "/" + rel;
  }

  /** A file's bytes, or null when it does not exist. */
  public byte[] read(String rel) {
    try (InputStream in = fs.open(new Path(uri(rel)))) {
      return in.readAllBytes();
    } catch (FileNotFoundException e) {
      return null;
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  /** Names of the files in a directory of the table (empty when it does not exist). */
  public List<String> list(String dir) {
    List<String> out = new ArrayList<>();
    try {
      for (FileStatus st : fs.listStatus(new Path(uri(dir)))) out.add(st.getPath().getName());
    } catch (FileNotFoundException e) {
      return out;
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    return out;
  }
}

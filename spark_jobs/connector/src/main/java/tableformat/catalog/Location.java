package tableformat.catalog;

import java.io.FileNotFoundException;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.URI;
import java.util.ArrayList;
import java.util.List;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;

/**
 * A warehouse directory through Hadoop's FileSystem (local path, file:, s3a:, hdfs:): a namespace
 * is a directory, a table a directory that holds {@code _log/} (specs/format.md §1).
 */
final class Location {
  private Location() {}

  /** A URI Hadoop opens: bare paths become file: URIs, s3: becomes s3a:, no trailing slash. */
  static String normalize(String uri) {
    String u = uri.contains("://") || uri.startsWith("file:") ? uri : "file://" + new java.io.File(uri).getAbsolutePath();
    if (u.startsWith("s3://")) u = "s3a://" + u.substring(5);
    while (u.endsWith("/") && !u.endsWith("://")) u = u.substring(0, u.length() - 1);
    return u;
  }

  static FileSystem fs(String uri, Configuration conf) {
    try {
      return FileSystem.get(URI.create(uri + "/"), conf);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  static boolean isTable(String uri, Configuration conf) {
    try {
      return fs(uri, conf).exists(new Path(uri + "/_log"));
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  static boolean isDirectory(String uri, Configuration conf) {
    try {
      return fs(uri, conf).getFileStatus(new Path(uri)).isDirectory();
    } catch (FileNotFoundException e) {
      return false;
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  /** The names of the sub-directories of {@code uri} that are tables ({@code tables}) or not, sorted. */
  static List<String> children(String uri, Configuration conf, boolean tables) {
    List<String> out = new ArrayList<>();
    try {
      FileSystem fs = fs(uri, conf);
      for (FileStatus st : fs.listStatus(new Path(uri))) {
        String name = st.getPath().getName();
        if (!st.isDirectory() || name.startsWith("_") || name.startsWith(".")) continue;
        if (isTable(uri + "/" + name, conf) == tables) out.add(name);
      }
    } catch (FileNotFoundException e) {
      return out;
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    out.sort(null);
    return out;
  }
}

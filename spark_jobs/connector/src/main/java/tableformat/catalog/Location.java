package tableformat.catalog;

import java.io.FileNotFoundException;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.util.ArrayList;
import java.util.List;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import tableformat.log.LogStore;

/**
 * A warehouse directory through Hadoop's FileSystem (local path, file:, s3a:, hdfs:): a namespace
 * is a directory, a table a directory that holds {@code _log/} (specs/format.md §1).
 */
final class Location {
  private Location() {}

  /** A URI Hadoop opens, its characters as given ({@link LogStore#normalize}). */
  static String normalize(String uri) {
    return LogStore.normalize(uri);
  }

  static FileSystem fs(String uri, Configuration conf) {
    return LogStore.fileSystem(uri, conf);
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

  static boolean hasChildren(String uri, Configuration conf) {
    try {
      return fs(uri, conf).listStatus(new Path(uri)).length > 0;
    } catch (FileNotFoundException e) {
      return false;
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  static void mkdirs(String uri, Configuration conf) {
    try {
      fs(uri, conf).mkdirs(new Path(uri));
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  /** Delete a directory and everything in it. */
  static void delete(String uri, Configuration conf) {
    try {
      fs(uri, conf).delete(new Path(uri), true);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }
}

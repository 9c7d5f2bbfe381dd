package tableformat.log;

import java.io.FileNotFoundException;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.util.functional.FutureIO;

/**
 * The table's files through Hadoop's FileSystem (local paths, file:, s3a:, hdfs:), relative to
 * the table root, as the log names them (§1). A file found by a listing is opened from its
 * listed status, so an object store answers one GET for it and no HEAD first.
 */
public final class LogStore {
  private final String root;
  private final FileSystem fs;
  /** Listings and file reads asked of the store (the open cost, for tests as Python's TransactionLog.reads). */
  private final AtomicLong lists = new AtomicLong(), reads = new AtomicLong();
  /** The same over every store of this JVM (a warm reader's store is another object than the caller's). */
  private static final AtomicLong allLists = new AtomicLong(), allReads = new AtomicLong();

  public static long allLists() {
    return allLists.get();
  }

  public static long allReads() {
    return allReads.get();
  }

  public LogStore(String uri, Configuration conf) {
    this.root = normalize(uri);
    this.fs = fileSystem(root, conf);
  }

  /** What makes two stores the same files ({@link LogCache}'s key): the location, the file system
   *  (its class and URI), the user it acts as, and the endpoint an object store is reached at. */
  private volatile String identity;

  private static String identity(String root, FileSystem fs, Configuration conf) {
    String user;
    try {
      user = org.apache.hadoop.security.UserGroupInformation.getCurrentUser().getUserName();
    } catch (IOException e) {
      user = "?";
    }
    String bucket = fs.getUri().getHost();
    return String.join("\n", root, fs.getClass().getName(), String.valueOf(fs.getUri()), user,
        String.valueOf(conf.get("fs.s3a.endpoint")),
        String.valueOf(bucket == null ? null : conf.get("fs.s3a.bucket." + bucket + ".endpoint")));
  }

  public String identity() {
    if (identity == null) identity = identity(root, fs, fs.getConf());
    return identity;
  }

  /** s3a's createFile option for a create with no probe of the name first (a HEAD and a LIST):
   *  new files have names no one made before (§1), and a log file's PUT is conditional (§8.1).
   *  Other stores ignore it. */
  public static final String S3A_CREATE_PERFORMANCE = "fs.s3a.create.performance";

  /** A table or warehouse location as the string Hadoop opens: a bare local path becomes a file:
   *  URI, s3: becomes s3a:, no trailing slash. Its characters are taken as they are, as Python's
   *  storage takes them (a space, brackets, braces, a literal {@code %20}): never decoded, never
   *  parsed as a java.net.URI, never globbed. */
  public static String normalize(String uri) {
    String u = uri.contains("://") || uri.startsWith("file:") ? uri : "file://" + new java.io.File(uri).getAbsolutePath();
    if (u.startsWith("s3://")) u = "s3a://" + u.substring(5);
    while (u.endsWith("/") && !u.endsWith("://")) u = u.substring(0, u.length() - 1);
    return u;
  }

  /** The file system of a normalized location, found through Hadoop's {@link Path}, which quotes
   *  what a URI cannot hold (java.net.URI.create refuses a space or a bracket). */
  public static FileSystem fileSystem(String uri, Configuration conf) {
    try {
      return new Path(uri + "/").getFileSystem(conf);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  /** The URI the JVM opens a table file by. */
  public String uri(String rel) {
    return root + "/" + rel;
  }

  public long lists() {
    return lists.get();
  }

  public long reads() {
    return reads.get();
  }

  /** A file's bytes, or null when it does not exist. */
  public byte[] read(String rel) {
    reads.incrementAndGet();
    allReads.incrementAndGet();
    try (InputStream in = fs.open(new Path(uri(rel)))) {
      return in.readAllBytes();
    } catch (FileNotFoundException e) {
      return null;
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  /** A listed file's bytes, opened from its status (no existence probe), or null when it is gone since. */
  public byte[] read(FileStatus status) {
    reads.incrementAndGet();
    allReads.incrementAndGet();
    try (InputStream in = FutureIO.awaitFuture(fs.openFile(status.getPath()).withFileStatus(status)
        .opt("fs.option.openfile.read.policy", "whole-file").build())) {
      return in.readAllBytes();
    } catch (FileNotFoundException e) {
      return null;
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  /** The files of a directory of the table with their statuses (empty when it does not exist): one
   *  listing, which an object store answers with one LIST request per page of names. */
  public List<FileStatus> listStatus(String dir) {
    lists.incrementAndGet();
    allLists.incrementAndGet();
    List<FileStatus> out = new ArrayList<>();
    try {
      var it = fs.listStatusIterator(new Path(uri(dir)));
      while (it.hasNext()) out.add(it.next());
    } catch (FileNotFoundException e) {
      return out;
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    return out;
  }
}

package tableformat.commit;

import java.io.IOException;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.nio.channels.FileChannel;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.Files;
import java.nio.file.StandardOpenOption;
import java.util.List;
import java.util.UUID;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FSDataOutputStream;
import org.apache.hadoop.fs.FileContext;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.LocalFileSystem;
import org.apache.hadoop.fs.Options;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.fs.RawLocalFileSystem;
import tableformat.log.InvalidOptionError;
import tableformat.log.LogStore;

/**
 * Creating a log file only if it does not exist (specs/format.md §8.1), the one atomic step a
 * commit takes, on each store as the engine does it (tableformat/format/storage.py):
 * <ul>
 *   <li>local disk: written and fsynced to {@code _log/.tmp-<uuid>}, then hard-linked to its name
 *       ({@code link} fails if the name exists), so it appears whole;</li>
 *   <li>HDFS: written to {@code _log/.tmp-<uuid>} ({@code create}, no overwrite), then renamed with
 *       {@code Rename.NONE} (HDFS's {@code rename2}), which the NameNode refuses atomically if the
 *       name exists;</li>
 *   <li>S3 (s3a): a conditional PUT, {@code If-None-Match: *} (Hadoop 3.4.2+'s
 *       {@code fs.option.create.conditional.overwrite}); 412 means another writer owns the name.
 *       In s3a's create performance mode: the condition alone decides, with no HEAD and LIST of
 *       the name first. {@code fs.s3a.create.conditional.enabled=false} makes every commit fail
 *       (InvalidOptionError): there is no put-if-absent without it;</li>
 *   <li>any other Hadoop store: {@code create(overwrite=false)}.</li>
 * </ul>
 * Never a rename that can replace a file.
 */
final class PutIfAbsent {
  static final String CONDITIONAL = "fs.option.create.conditional.overwrite";
  private final String root;
  private final FileSystem fs;
  private final Configuration conf;

  PutIfAbsent(String root, Configuration conf) {
    this.root = LogStore.normalize(root);
    this.conf = conf;
    this.fs = LogStore.fileSystem(this.root, conf);
  }

  Path path(String rel) {
    return new Path(root + "/" + rel);
  }

  private String scheme() {
    return fs.getUri().getScheme();
  }

  /** Creates {@code rel} with {@code data}; false when it exists. */
  boolean put(String rel, byte[] data) {
    Path p = path(rel);
    try {
      return switch (scheme()) {
        case "file" -> local(p, data);
        case "hdfs", "viewfs" -> hdfs(p, data);
        case "s3a" -> s3a(p, data);
        default -> exclusive(p, data);
      };
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  private java.nio.file.Path localFile(Path p) {
    FileSystem raw = fs instanceof LocalFileSystem l ? l.getRaw() : fs;
    return ((RawLocalFileSystem) raw).pathToFile(p).toPath();
  }

  private boolean local(Path p, byte[] data) throws IOException {
    java.nio.file.Path dst = localFile(p);
    Files.createDirectories(dst.getParent());
    java.nio.file.Path tmp = dst.resolveSibling(".tmp-" + UUID.randomUUID().toString().replace("-", ""));
    try (FileChannel ch = FileChannel.open(tmp, StandardOpenOption.CREATE_NEW, StandardOpenOption.WRITE)) {
      ch.write(java.nio.ByteBuffer.wrap(data));
      ch.force(true);
    }
    try {
      Files.createLink(dst, tmp);
      return true;
    } catch (FileAlreadyExistsException e) {
      return false;
    } finally {
      Files.deleteIfExists(tmp);
    }
  }

  private boolean hdfs(Path p, byte[] data) throws IOException {
    Path tmp = new Path(p.getParent(), ".tmp-" + UUID.randomUUID().toString().replace("-", ""));
    try (FSDataOutputStream out = fs.create(tmp, false)) {
      out.write(data);
      out.hsync();
    }
    boolean renamed = false;
    try {
      FileContext.getFileContext(fs.getUri(), conf).rename(tmp, p, Options.Rename.NONE);
      renamed = true;
      return true;
    } catch (org.apache.hadoop.fs.FileAlreadyExistsException e) {
      return false;
    } finally {
      if (!renamed) {                 // a renamed file is gone from tmp: no Delete call for it
        try {
          fs.delete(tmp, false);
        } catch (IOException ignored) {
          // an abandoned .tmp- file is no commit; vacuum removes it (§8.1)
        }
      }
    }
  }

  private boolean s3a(Path p, byte[] data) throws IOException {
    var builder = fs.createFile(p).overwrite(false).recursive();
    builder.must(CONDITIONAL, true);
    builder.opt(LogStore.S3A_CREATE_PERFORMANCE, true);    // the PUT's condition decides, no HEAD and LIST first
    try (FSDataOutputStream out = builder.build()) {
      out.write(data);
    } catch (IOException e) {
      if (exists(e)) return false;
      if (String.valueOf(e.getMessage()).contains("Conditional Writes Unavailable"))
        throw new InvalidOptionError("s3a's conditional create is off (fs.s3a.create.conditional.enabled=false):"
            + " a commit needs put-if-absent, an If-None-Match PUT (specs/format.md §8.1); " + p);
      throw e;
    }
    return true;
  }

  /** s3a's 412 (RemoteFileChangedException, "PreconditionFailed") or an exclusive create's refusal. */
  private static boolean exists(Throwable e) {
    for (Throwable t = e; t != null; t = t.getCause()) {
      if (t instanceof org.apache.hadoop.fs.FileAlreadyExistsException || t instanceof FileAlreadyExistsException)
        return true;
      String m = String.valueOf(t.getMessage());
      if (t.getClass().getSimpleName().equals("RemoteFileChangedException") || m.contains("412")
          || m.contains("PreconditionFailed")) return true;
    }
    return false;
  }

  private boolean exclusive(Path p, byte[] data) throws IOException {
    try (OutputStream out = fs.create(p, false)) {
      out.write(data);
    } catch (IOException e) {
      if (exists(e)) return false;
      throw e;
    }
    return true;
  }

  /** Overwrites {@code rel} (the {@code _last_checkpoint} hint only). */
  void overwrite(String rel, byte[] data) throws IOException {
    Path p = path(rel);
    if (scheme().equals("file")) {
      Files.write(localFile(p), data);
      return;
    }
    try (OutputStream out = fs.create(p, true)) {
      out.write(data);
    }
  }

  /** Deletes the table's files, ignoring any that are gone or cannot be deleted (a failed write's
   *  leftovers: vacuum removes what remains). */
  void deleteQuietly(List<String> rels) {
    for (String r : rels) {
      try {
        fs.delete(path(r), false);
      } catch (IOException | RuntimeException ignored) {
        // best effort
      }
    }
  }

  boolean exists(String rel) {
    try {
      return fs.exists(path(rel));
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }
}

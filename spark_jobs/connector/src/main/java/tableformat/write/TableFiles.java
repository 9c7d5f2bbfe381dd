package tableformat.write;

import java.io.IOException;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.util.zip.CRC32;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.Abortable;
import org.apache.hadoop.fs.FSDataOutputStream;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import tableformat.log.LogStore;

/**
 * A table's files as a writer makes them (§1): new files under the root, by relative path,
 * each counted and checksummed as written ({@link Sink}: the size and CRC-32 its descriptor
 * records, §8.2), and deleted again when a write fails.
 */
public final class TableFiles {
  private final String root;
  private final FileSystem fs;

  public TableFiles(String rootUri, Configuration conf) {
    this.root = LogStore.normalize(rootUri);
    this.fs = LogStore.fileSystem(root, conf);
  }

  public String uri(String rel) {
    return root + "/" + rel;
  }

  /** A new file (never overwriting one: its name is new). */
  public Sink create(String rel) {
    try {
      var builder = fs.createFile(new Path(uri(rel))).overwrite(false).recursive();
      builder.opt(LogStore.S3A_CREATE_PERFORMANCE, true);     // the name is new (§1): nothing to probe
      return new Sink(builder.build());
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  /** Delete files, ignoring those already gone; the first failure is thrown after trying all. */
  public void deleteQuietly(Iterable<String> rels) {
    for (String rel : rels) {
      try {
        fs.delete(new Path(uri(rel)), false);
      } catch (IOException e) {      // an orphan is removed by vacuum (§1)
      }
    }
  }

  /** An output stream that counts and checksums the bytes written through it. */
  public static final class Sink extends OutputStream {
    private final FSDataOutputStream out;
    private final CRC32 crc = new CRC32();
    private long size;
    private boolean closed;

    Sink(FSDataOutputStream out) {
      this.out = out;
    }

    @Override
    public void write(int b) throws IOException {
      out.write(b);
      crc.update(b);
      size++;
    }

    @Override
    public void write(byte[] b, int off, int len) throws IOException {
      out.write(b, off, len);
      crc.update(b, off, len);
      size += len;
    }

    public long size() {
      return size;
    }

    public long crc32() {
      return crc.getValue();
    }

    @Override
    public void flush() throws IOException {
      out.flush();
    }

    @Override
    public void close() throws IOException {
      if (!closed) {
        closed = true;
        out.close();
      }
    }

    /** Close without publishing where the store can (an S3 upload is aborted). */
    public void discard() {
      if (closed) return;
      closed = true;
      try {
        if (out.getWrappedStream() instanceof Abortable a) a.abort();
        else out.close();
      } catch (IOException | RuntimeException e) {   // its path is deleted anyway
      }
    }
  }
}

package tableformat.plan;

import java.io.ByteArrayInputStream;
import java.io.IOException;
import org.apache.parquet.io.DelegatingSeekableInputStream;
import org.apache.parquet.io.InputFile;
import org.apache.parquet.io.SeekableInputStream;

/** A Parquet file already read whole (and checked): Parquet's reader over its bytes. */
public final class BytesInputFile implements InputFile {
  private final byte[] bytes;

  public BytesInputFile(byte[] bytes) {
    this.bytes = bytes;
  }

  @Override
  public long getLength() {
    return bytes.length;
  }

  @Override
  public SeekableInputStream newStream() {
    Positioned in = new Positioned(bytes);
    return new DelegatingSeekableInputStream(in) {
      @Override
      public long getPos() {
        return in.position();
      }

      @Override
      public void seek(long newPos) throws IOException {
        in.seekTo((int) newPos);
      }
    };
  }

  private static final class Positioned extends ByteArrayInputStream {
    Positioned(byte[] b) {
      super(b);
    }

    long position() {
      return pos;
    }

    void seekTo(int p) {
      pos = p;
    }
  }
}

package tableformat.parquet;

import org.apache.spark.sql.types.DataTypes;

/** The parquet package's part of VectorsCheck (tableformat.connector): its reader is package-private. */
public final class ParquetCheck {
  /** A reader whose constructor fails after opening the file (a type the column reader cannot
   *  copy) closes the file before it throws: counted by a file system that counts open streams. */
  public static void failedConstructor(String file) {
    org.apache.hadoop.conf.Configuration conf = new org.apache.hadoop.conf.Configuration();
    conf.set("fs.counting.impl", CountingFs.class.getName());
    conf.setBoolean("fs.counting.impl.disable.cache", true);
    String error = "none";
    try {
      org.apache.hadoop.fs.Path p = new org.apache.hadoop.fs.Path("counting://" + file);
      org.apache.hadoop.fs.FileStatus st = p.getFileSystem(conf).getFileStatus(p);
      org.apache.spark.sql.types.StructType requested = new org.apache.spark.sql.types.StructType()
          .add("c1", DataTypes.createArrayType(DataTypes.IntegerType));
      new ParquetColumnsReader(conf, st, requested, 0, st.getLen(), 16).close();
    } catch (java.io.IOException | RuntimeException e) {
      error = e.getClass().getSimpleName();
    }
    System.out.println("ctor.leak=" + CountingFs.OPENED.get() + "," + CountingFs.OPEN.get() + "," + error);
  }

  /** The local file system under the scheme {@code counting:}, counting the streams it opened
   *  and those still open. */
  public static final class CountingFs extends org.apache.hadoop.fs.RawLocalFileSystem {
    static final java.util.concurrent.atomic.AtomicInteger OPEN = new java.util.concurrent.atomic.AtomicInteger();
    static final java.util.concurrent.atomic.AtomicInteger OPENED = new java.util.concurrent.atomic.AtomicInteger();

    @Override
    public java.net.URI getUri() {
      return java.net.URI.create("counting:///");
    }

    @Override
    public String getScheme() {
      return "counting";
    }

    @Override
    public org.apache.hadoop.fs.FSDataInputStream open(org.apache.hadoop.fs.Path f, int bufferSize)
        throws java.io.IOException {
      org.apache.hadoop.fs.FSDataInputStream in = super.open(f, bufferSize);
      OPEN.incrementAndGet();
      OPENED.incrementAndGet();
      return new org.apache.hadoop.fs.FSDataInputStream(in) {
        private boolean closed;

        @Override
        public void close() throws java.io.IOException {
          if (!closed) OPEN.decrementAndGet();
          closed = true;
          super.close();
        }
      };
    }
  }
}

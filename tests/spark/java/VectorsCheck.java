package tableformat.connector;

import org.apache.spark.sql.execution.vectorized.OnHeapColumnVector;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.Decimal;

/** Unit checks of the connector's batch views and delta cache, run by test_connector_units.py in a
 *  JVM of its own (the classes are package-private): prints {@code name=value} lines. */
public final class VectorsCheck {
  public static void main(String[] args) {
    OnHeapColumnVector base = new OnHeapColumnVector(4, DataTypes.DoubleType);
    base.putDouble(0, 1);
    base.putNull(1);
    base.putDouble(2, 3);
    base.putDouble(3, 4);
    OnHeapColumnVector values = new OnHeapColumnVector(3, DataTypes.DoubleType);
    values.putDouble(0, 9);
    values.putNull(1);
    values.putNull(2);                     // a value of rows in another batch
    int[] patch = {-1, 0, 1, -1, 2, 2};    // row 1: NULL -> 9, row 2: 3 -> NULL; a scratch longer than the batch
    PatchedColumnVector p = new PatchedColumnVector(base, patch, values, 4);
    System.out.println("patched.numNulls=" + p.numNulls());
    System.out.println("patched.hasNull=" + p.hasNull());
    PatchedColumnVector none = new PatchedColumnVector(base, new int[] {-1, 0, -1, -1}, values, 4);
    System.out.println("patchedNone.numNulls=" + none.numNulls());
    System.out.println("patchedNone.hasNull=" + none.hasNull());
    RemappedColumnVector live = new RemappedColumnVector(base, new int[] {0, 2, 3});
    System.out.println("remapped.numNulls=" + live.numNulls());
    System.out.println("remapped.hasNull=" + live.hasNull());
    RemappedColumnVector kept = new RemappedColumnVector(p, new int[] {1, 2});
    System.out.println("remappedPatched.numNulls=" + kept.numNulls());

    OnHeapColumnVector str = new OnHeapColumnVector(5, DataTypes.StringType);
    OnHeapColumnVector wide = new OnHeapColumnVector(5, DataTypes.createDecimalType(38, 10));
    OnHeapColumnVector flags = new OnHeapColumnVector(5, DataTypes.BooleanType);
    for (int i = 0; i < 5; i++) {
      str.putByteArray(i, ("s" + i).getBytes());
      wide.putDecimal(i, Decimal.apply(new java.math.BigDecimal("1234567890123456789012345." + i).setScale(10), 38, 10), 38);
      flags.putBoolean(i, i % 2 == 0);
    }
    int[] keep = {0, 2, 4};
    boolean moved = DeletedRowFilter.compactInPlace(str, keep) && DeletedRowFilter.compactInPlace(wide, keep)
        && DeletedRowFilter.compactInPlace(flags, keep);
    StringBuilder sb = new StringBuilder();
    for (int k = 0; k < 3; k++) {
      sb.append(str.getUTF8String(k)).append('/').append(wide.getDecimal(k, 38, 10).toJavaBigDecimal().toPlainString())
          .append('/').append(flags.getBoolean(k)).append(' ');
    }
    System.out.println("inPlace.moved=" + moved);
    System.out.println("inPlace.rows=" + sb.toString().trim());
    System.out.println("inPlace.withNulls=" + DeletedRowFilter.compactInPlace(base, keep));

    OnHeapColumnVector plain = new OnHeapColumnVector(4, DataTypes.DoubleType);
    OnHeapColumnVector idx = new OnHeapColumnVector(4, DataTypes.LongType);
    for (int i = 0; i < 4; i++) {
      plain.putDouble(i, i);
      idx.putLong(i, 100 + i);
    }
    OnHeapColumnVector upd = new OnHeapColumnVector(2, DataTypes.DoubleType);
    upd.putDouble(0, 7.5);
    upd.putNull(1);
    RowSetDeltas.ColumnChanges set = new RowSetDeltas.ColumnChanges(new long[] {101, 103}, new int[] {0, 0}, upd);
    org.apache.spark.sql.vectorized.ColumnVector got = UpdateApplier.apply(plain, idx, 4, set, null);
    System.out.println("patch.inPlace=" + (got == plain) + "," + got.getDouble(1) + "," + got.getDouble(2) + ","
        + got.getDouble(3) + "," + got.numNulls());
    RowSetDeltas.ColumnChanges toNull = new RowSetDeltas.ColumnChanges(new long[] {102}, new int[] {1}, upd);
    got = UpdateApplier.apply(plain, idx, 4, toNull, null);
    System.out.println("patch.toNull=" + (got != plain) + "," + got.isNullAt(2) + "," + got.numNulls()
        + "," + plain.numNulls());

    RowSetDeltas small = new RowSetDeltas(bits(1000));
    RowSetDeltas big = new RowSetDeltas(bits(1 << 20));
    long s = small.bytes(), b = big.bytes();
    System.out.println("bytes.ordered=" + (s < b && b >= (1 << 17)));
    DeltaLoader.cacheBytes = b + 2 * s;     // room for one big and two small
    DeltaLoader.cache("s1", small);
    DeltaLoader.cache("s2", small);
    DeltaLoader.cache("b1", big);
    System.out.println("cache.afterBig=" + DeltaLoader.cacheUse()[0] + "," + (DeltaLoader.cacheUse()[1] <= DeltaLoader.cacheBytes));
    DeltaLoader.cached("s1");               // s1 used: s2 is now the least recently used
    DeltaLoader.cache("s3", small);
    System.out.println("cache.lru=" + (DeltaLoader.cached("s2") == null) + "," + (DeltaLoader.cached("s1") != null)
        + "," + (DeltaLoader.cacheUse()[1] <= DeltaLoader.cacheBytes));
    DeltaLoader.cacheBytes = s;             // shrunk below one big entry: it is not kept at all
    DeltaLoader.cache("b2", big);
    System.out.println("cache.tooBig=" + (DeltaLoader.cached("b2") == null));

    closing();
    unsignedRowids();
    strictPlan();
    if (args.length > 0) failedConstructor(args[0]);
  }

  /** Three resources, the first two failing to close: all three are closed, the first failure
   *  is thrown with the second suppressed. */
  private static void closing() {
    int[] closed = new int[1];
    java.util.List<AutoCloseable> rs = java.util.List.of(
        () -> { closed[0]++; throw new java.io.IOException("first"); },
        () -> { closed[0]++; throw new IllegalStateException("second"); },
        () -> closed[0]++);
    String thrown = "none";
    try {
      Closer.closeAll(rs);
    } catch (java.io.IOException e) {
      thrown = e.getMessage() + "+" + e.getSuppressed().length + ":" + e.getSuppressed()[0].getMessage();
    }
    System.out.println("close.all=" + closed[0] + "," + thrown);
  }

  /** A reader whose constructor fails after opening the file (a type the column reader cannot
   *  copy) closes the file before it throws: counted by a file system that counts open streams. */
  private static void failedConstructor(String file) {
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

  /** A deleted-row set of rows 0..n-1: its heap grows with n. */
  private static RowIdSet bits(int n) {
    RowIdSet d = new RowIdSet();
    for (int i = 0; i < n; i++) d.set(i);
    return d;
  }

  /** Rowids past 2^31 (the format's rowids are uint32): set, probed, and dropped from a batch. */
  private static void unsignedRowids() {
    RowIdSet d = new RowIdSet();
    long far = (1L << 32) - 1, past = (1L << 31) + 5;
    d.set(7);
    d.set(past);
    d.set(far);
    String refused = "no";
    try {
      d.set(1L << 32);
    } catch (IllegalArgumentException e) {
      refused = "yes";
    }
    System.out.println("rowids.unsigned=" + d.get(past) + "," + d.get(past - 1) + "," + d.nextSetBit(8) + ","
        + d.nextSetBit(past + 1) + "," + d.nextSetBit(far + 1) + "," + refused);
    OnHeapColumnVector idx = new OnHeapColumnVector(4, DataTypes.LongType);
    for (int i = 0; i < 4; i++) idx.putLong(i, past - 2 + i);     // rows past-2 .. past+1
    int[] live = DeletedRowFilter.liveRows(idx, 4, d);
    idx.putLong(3, far);                                          // positions not contiguous
    int[] scattered = DeletedRowFilter.liveRows(idx, 4, d);
    System.out.println("rowids.live=" + java.util.Arrays.toString(live) + java.util.Arrays.toString(scattered));
  }

  /** A plan with one field taken out, or one unknown added, at each level, is refused by name. */
  private static void strictPlan() {
    String delta = "{\"path\":\"file:/d\",\"size\":10,\"order\":0,\"min_ts\":1,\"max_ts\":2,\"has_ts\":false,"
        + "\"updates\":[1],\"deletes\":true}";
    String good = "{\"version\":3,\"read_ts\":null,\"columns\":[{\"id\":1,\"name\":\"v\",\"type\":\"double\","
        + "\"nullable\":true,\"default\":null}],\"rowsets\":[{\"id\":\"r\",\"num_rows\":5,\"base\":[{\"path\":"
        + "\"file:/b\",\"size\":20,\"columns\":[1]}],\"redo\":[" + delta + "],\"undo\":[],\"missing\":[],"
        + "\"tablet\":\"t\",\"native\":true}]}";
    ReadPlan p = ReadPlan.parse(good);
    System.out.println("plan.good=" + p.rowsets.get(0).redo.get(0).size + "," + p.rowsets.get(0).redo.get(0).maxTs
        + "," + p.rowsets.get(0).tablet);
    String[][] bad = {
        {"size", good.replace("\"size\":10,", "")},
        {"max_ts", good.replace("\"max_ts\":2,", "")},
        {"order", good.replace("\"order\":0,", "")},
        {"base.size", good.replace("\"size\":20,", "")},
        {"unknown", good.replace("\"deletes\":true", "\"deletes\":true,\"num_records\":4")},
        {"top", good.replace("\"version\":3,", "\"version\":3,\"extra\":1,")},
        {"type", good.replace("\"size\":10", "\"size\":\"10\"")},
        {"rows", good.replace("\"num_rows\":5", "\"num_rows\":4294967297")},
    };
    StringBuilder out = new StringBuilder();
    for (String[] b : bad) {
      String msg = "accepted";
      try {
        ReadPlan.parse(b[1]);
      } catch (IllegalArgumentException e) {
        msg = e.getMessage().replace("tableformat: the read plan is malformed: ", "");
      }
      out.append(b[0]).append(':').append(msg).append(';');
    }
    System.out.println("plan.refused=" + out);
  }
}

package tableformat.connector;

import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
import org.apache.hadoop.conf.Configuration;
import org.apache.parquet.filter2.predicate.FilterPredicate;
import org.apache.spark.sql.catalyst.expressions.GenericInternalRow;
import org.apache.spark.sql.connector.read.PartitionReader;
import org.apache.spark.sql.execution.vectorized.ColumnVectorUtils;
import org.apache.spark.sql.execution.vectorized.ConstantColumnVector;
import org.apache.spark.sql.sources.Filter;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.Metadata;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.vectorized.ColumnVector;
import org.apache.spark.sql.vectorized.ColumnarBatch;
import tableformat.deltas.DeletedRowFilter;
import tableformat.deltas.DeltaLoader;
import tableformat.deltas.RowSetDeltas;
import tableformat.deltas.UpdateApplier;
import tableformat.parquet.ColumnGroupCursor;
import tableformat.parquet.ParquetFiles;
import tableformat.parquet.ParquetPushdown;

/**
 * Reads one task's rowsets as ColumnarBatches (Kudu's DeltaApplier inside Spark's scan): the
 * column groups of a rowset in lockstep, read defaults for columns it lacks, then REDO/UNDO
 * updates laid over the changed rows and deleted rows dropped, batch by batch (§9.4 rules 2-6).
 */
final class RowSetBatchReader implements PartitionReader<ColumnarBatch> {
  private final Configuration conf;
  private final List<ReadPlan.ColumnPlan> cols;
  private final Long readTs;
  private final Filter[] pushed;
  private final int capacity;
  private final List<RowSetPartition.Slice> slices;
  private int next;
  private ColumnarBatch current;

  // the open slice
  private ColumnGroupCursor[] groups;
  private int[] groupOf, posOf;
  private ColumnVector[] constants;
  private RowSetDeltas deltas;
  private int[][] scratch;

  RowSetBatchReader(Configuration conf, List<ReadPlan.ColumnPlan> cols, Long readTs, Filter[] pushed, int capacity,
                    RowSetPartition part) {
    this.conf = conf;
    this.cols = cols;
    this.readTs = readTs;
    this.pushed = pushed;
    this.capacity = capacity;
    this.slices = part.slices;
  }

  @Override
  public boolean next() throws IOException {
    while (true) {
      if (groups == null) {
        if (next >= slices.size()) return false;
        open(slices.get(next++));
      }
      ColumnarBatch b = produce();
      if (b == null) {
        closeSlice();
        continue;
      }
      if (b.numRows() == 0) continue;
      current = b;
      return true;
    }
  }

  @Override
  public ColumnarBatch get() {
    return current;
  }

  @Override
  public void close() throws IOException {
    closeSlice();
  }

  private void open(RowSetPartition.Slice s) throws IOException {
    ReadPlan.RowSetPlan rs = s.rowset;
    List<ReadPlan.FilePlan> files = new ArrayList<>();
    groupOf = new int[cols.size()];
    posOf = new int[cols.size()];
    List<List<ReadPlan.ColumnPlan>> groupCols = new ArrayList<>();
    constants = new ColumnVector[cols.size()];
    for (ReadPlan.FilePlan f : rs.base) {       // the rowset's column-group order: the first is primary
      for (int j = 0; j < cols.size(); j++) {
        if (rs.baseOf(cols.get(j).id) != f) continue;
        int g = files.indexOf(f);
        if (g < 0) {
          files.add(f);
          groupCols.add(new ArrayList<>());
          g = files.size() - 1;
        }
        groupOf[j] = g;
        posOf[j] = groupCols.get(g).size();
        groupCols.get(g).add(cols.get(j));
      }
    }
    for (int j = 0; j < cols.size(); j++) {
      ReadPlan.ColumnPlan c = cols.get(j);
      if (rs.baseOf(c.id) == null) {
        groupOf[j] = -1;
        ConstantColumnVector v = new ConstantColumnVector(capacity, c.type);
        ColumnVectorUtils.populate(v, new GenericInternalRow(new Object[] {c.readDefault}), 0);
        constants[j] = v;
      }
    }
    if (files.isEmpty()) {                      // no column read from a file (count): the rows of one
      files.add(rs.base.get(0));
      groupCols.add(new ArrayList<>());
    }
    deltas = rs.clean() ? null : DeltaLoader.load(conf, rs, cols, readTs);
    if (deltas != null && deltas.deleted == null && deltas.columns.isEmpty()) deltas = null;
    // Row positions matter only to place deltas and to align column groups: a clean rowset in
    // one file is read without Spark's row-index column.
    boolean indexed = deltas != null || files.size() > 1;
    scratch = new int[cols.size()][];
    groups = new ColumnGroupCursor[files.size()];
    try {
      for (int g = 0; g < files.size(); g++) {
        ReadPlan.FilePlan f = files.get(g);
        List<ReadPlan.ColumnPlan> gc = groupCols.get(g);
        StructField[] fields = new StructField[gc.size() + (indexed ? 1 : 0)];
        DataType[] types = new DataType[gc.size()];
        for (int j = 0; j < gc.size(); j++) {
          fields[j] = new StructField("c" + gc.get(j).id, gc.get(j).type, true, Metadata.empty());
          types[j] = gc.get(j).type;
        }
        if (indexed) fields[gc.size()] = ParquetFiles.ROW_INDEX;
        org.apache.hadoop.fs.FileStatus st = ParquetFiles.checkedStatus(conf, f.path, f.size);
        long length = st.getLen();
        boolean split = g == 0 && s.length >= 0;
        FilterPredicate filter = files.size() == 1 ? ParquetPushdown.predicate(pushed, rs, cols) : null;
        // every column and row of the file read here (no split, no row group skipped): check it whole (§8.2)
        boolean whole = f.crc32 != null && s.length < 0 && filter == null && gc.size() == f.columns.length;
        byte[] verified = whole ? ParquetFiles.readVerified(conf, st, f.crc32) : null;
        groups[g] = new ColumnGroupCursor(ParquetFiles.open(conf, st, new StructType(fields),
            split ? s.start : 0, split ? s.length : length, capacity, filter, verified), types, f.path, indexed);
      }
    } catch (IOException | RuntimeException e) {
      closeSlice();
      throw e;
    }
  }

  private ColumnarBatch produce() throws IOException {
    ColumnGroupCursor primary = groups[0];
    if (!primary.advance()) return null;
    ColumnarBatch b = primary.batch;
    int n = b.numRows();
    ColumnVector rowIndex = deltas != null || groups.length > 1 ? primary.rowIndex() : null;
    ColumnVector[][] aligned = new ColumnVector[groups.length][];
    ColumnVector[] out = new ColumnVector[cols.size()];
    for (int j = 0; j < out.length; j++) {
      int g = groupOf[j];
      if (g < 0) {
        out[j] = constants[j];
      } else if (g == 0) {
        out[j] = b.column(posOf[j]);
      } else {
        if (aligned[g] == null) aligned[g] = groups[g].align(n == 0 ? 0 : rowIndex.getLong(0), n);
        out[j] = aligned[g][posOf[j]];
      }
      if (deltas != null) {
        RowSetDeltas.ColumnChanges ch = deltas.columns.get(cols.get(j).id);
        if (ch != null) {
          if (scratch[j] == null || scratch[j].length < n) scratch[j] = new int[Math.max(n, capacity)];
          out[j] = UpdateApplier.apply(out[j], rowIndex, n, ch, scratch[j]);
        }
      }
    }
    int rows = n;
    if (deltas != null && deltas.deleted != null) {
      int[] live = DeletedRowFilter.liveRows(rowIndex, n, deltas.deleted);
      if (live != null) {
        out = DeletedRowFilter.compact(out, live);
        rows = live.length;
      }
    }
    return new ColumnarBatch(out, rows);
  }

  /** Closes every reader and constant of the open slice, even when one close() throws. */
  private void closeSlice() throws IOException {
    List<AutoCloseable> open = new ArrayList<>();
    if (groups != null) open.addAll(java.util.Arrays.asList(groups));
    if (constants != null) open.addAll(java.util.Arrays.asList(constants));
    groups = null;
    constants = null;
    deltas = null;
    Closer.closeAll(open);
  }
}

package tableformat.catalog;

import com.fasterxml.jackson.databind.JsonNode;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.expressions.GenericInternalRow;
import org.apache.spark.sql.catalyst.util.GenericArrayData;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.Decimal;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.unsafe.types.UTF8String;
import tableformat.log.CanonicalJson;
import tableformat.log.DeltaFile;
import tableformat.log.FileRef;
import tableformat.log.RowSet;
import tableformat.log.TableState;
import tableformat.plan.Column;
import tableformat.plan.KeyDecoder;
import tableformat.plan.Pruning;
import tableformat.plan.Schema;

/**
 * The rows of the {@code tablets}, {@code rowsets}, {@code deltas} and {@code files} metadata tables
 * of one state, from the log alone: the columns and meanings of the engine's
 * (tableformat/read/inspect.py), so SQL over either gives the same answer.
 */
final class MetadataRows {
  private MetadataRows() {}

  static final StructType TABLETS = longs(longs(new StructType().add("tablet", DataTypes.StringType),
      "rowsets", "rows", "live_rows", "deleted_rows").add("deleted_fraction", DataTypes.DoubleType),
      "redo_files", "undo_files", "base_bytes", "index_bytes", "delta_bytes", "bytes");
  static final StructType DELTAS = longs(new StructType().add("path", DataTypes.StringType)
      .add("kind", DataTypes.StringType).add("rowset", DataTypes.StringType).add("tablet", DataTypes.StringType),
      "records", "deletes", "reinserts").add("updated_columns", DataTypes.createArrayType(DataTypes.StringType))
      .add("size", DataTypes.LongType).add("min_ts", DataTypes.TimestampType).add("max_ts", DataTypes.TimestampType);
  static final StructType FILES = new StructType().add("path", DataTypes.StringType).add("kind", DataTypes.StringType)
      .add("rowset", DataTypes.StringType).add("tablet", DataTypes.StringType).add("size", DataTypes.LongType)
      .add("crc32", DataTypes.LongType);

  private static StructType longs(StructType s, String... names) {
    for (String n : names) s = s.add(n, DataTypes.LongType);
    return s;
  }

  static final StructType HISTORY = longs(new StructType().add("version", DataTypes.LongType, false)
      .add("timestamp", DataTypes.TimestampType, false).add("operation", DataTypes.StringType),
      "read_version", "inserted", "updated", "deleted", "ignored").add("counts", DataTypes.StringType);

  /** inspect.py's history: every commit up to {@code upTo}, its counts also as JSON (sort_keys). */
  static List<InternalRow> history(List<tableformat.log.CommitInfo> commits, long upTo) {
    List<InternalRow> out = new ArrayList<>();
    for (tableformat.log.CommitInfo h : commits) {
      if (h.version() > upTo) continue;
      JsonNode c = h.counts() == null ? com.fasterxml.jackson.databind.node.JsonNodeFactory.instance.objectNode()
          : h.counts();
      StringBuilder json = new StringBuilder();
      dumps(c, json);
      out.add(new GenericInternalRow(new Object[] {h.version(), h.timestamp(), str(h.operation()), h.readVersion(),
          c.path("inserted").asLong(0), c.path("updated").asLong(0), c.path("deleted").asLong(0),
          c.path("ignored").asLong(0), str(json.toString())}));
    }
    return out;
  }

  static StructType rowsetsSchema(TableState st) {
    StructType key = new StructType();
    for (Column c : new Schema(st.schema()).key) key = key.add(c.name(), DataType.fromDDL(c.type().sparkType()));
    StructType s = longs(new StructType().add("rowset", DataTypes.StringType).add("tablet", DataTypes.StringType),
        "rows", "live_rows", "deleted_rows").add("deleted_fraction", DataTypes.DoubleType)
        .add("delta_fraction", DataTypes.DoubleType).add("min_key", key).add("max_key", key)
        .add("min_key_hex", DataTypes.StringType).add("max_key_hex", DataTypes.StringType);
    return longs(s, "base_files", "redo_files", "undo_files", "redo_records", "undo_records", "base_bytes",
        "index_bytes", "delta_bytes", "bytes").add("created", DataTypes.TimestampType).add("stats", DataTypes.StringType);
  }

  private static UTF8String str(String s) {
    return s == null ? null : UTF8String.fromString(s);
  }

  /** One rowset's figures, as inspect.py's _rowset_row computes them. */
  private record Figures(RowSet rs, long deleted, long updates, long redoFiles, long undoFiles, long redoRecords,
                         long undoRecords, long baseBytes, long indexBytes, long deltaBytes) {
    static Figures of(TableState st, RowSet rs) {
      long deleted = 0, updates = 0, rf = 0, uf = 0, rr = 0, ur = 0, base = 0, delta = 0;
      for (DeltaFile d : st.deltasOf(rs.id())) {
        delta += d.size();
        if (d.isRedo()) {
          rf++;
          rr += d.numRecords();
          deleted += d.deleteCount() - d.reinsertCount();
          updates += d.numRecords() - d.deleteCount() - d.reinsertCount();
        } else {
          uf++;
          ur += d.numRecords();
        }
      }
      for (FileRef f : rs.base()) base += f.size();
      long index = rs.pkIndex().size() + (rs.bloom() == null ? 0 : rs.bloom().size());
      return new Figures(rs, deleted, updates, rf, uf, rr, ur, base, index, delta);
    }

    long bytes() {
      return baseBytes + indexBytes + deltaBytes;
    }
  }

  private static List<Figures> sorted(TableState st) {
    List<Figures> out = new ArrayList<>();
    for (RowSet rs : st.rowsets()) out.add(Figures.of(st, rs));
    out.sort((a, b) -> {
      int c = a.rs.tablet().compareTo(b.rs.tablet());
      return c != 0 ? c : java.util.Arrays.compareUnsigned(a.rs.minKey(), b.rs.minKey());
    });
    return out;
  }

  static List<InternalRow> rowsets(TableState st) {
    Schema schema = new Schema(st.schema());
    List<InternalRow> out = new ArrayList<>();
    for (Figures f : sorted(st)) {
      RowSet rs = f.rs;
      double n = Math.max(rs.numRows(), 1);
      out.add(new GenericInternalRow(new Object[] {str(rs.id()), str(rs.tablet()), rs.numRows(),
          rs.numRows() - f.deleted, f.deleted, f.deleted / n, f.updates / n, key(schema, rs.minKey()),
          key(schema, rs.maxKey()), str(hex(rs.minKey())), str(hex(rs.maxKey())), (long) rs.base().size(),
          f.redoFiles, f.undoFiles, f.redoRecords, f.undoRecords, f.baseBytes, f.indexBytes, f.deltaBytes, f.bytes(),
          rs.createdTs() == null || rs.createdTs() == 0 ? null : rs.createdTs(), str(stats(schema, rs.stats()))}));
    }
    return out;
  }

  private static String hex(byte[] b) {
    return java.util.HexFormat.of().formatHex(b);
  }

  private static InternalRow key(Schema schema, byte[] key) {
    List<Object> vals = KeyDecoder.decode(key, schema.key.stream().map(Column::type).toList());
    if (vals == null) return null;
    Object[] cells = new Object[vals.size()];
    for (int i = 0; i < cells.length; i++) {
      Object v = vals.get(i);
      String kind = schema.key.get(i).type().kind();
      cells[i] = v instanceof String s ? UTF8String.fromString(s)
          : v instanceof java.math.BigDecimal d ? Decimal.apply(d)
          : kind.equals("int8") ? (Object) ((Long) v).byteValue() : kind.equals("int16") ? (Object) ((Long) v).shortValue()
          : kind.equals("int32") || kind.equals("date") ? (Object) ((Long) v).intValue() : v;
    }
    return new GenericInternalRow(cells);
  }

  /** inspect.py's json.dumps(..., sort_keys=True): statistics by column name, Python's default separators. */
  private static String stats(Schema schema, JsonNode stats) {
    Map<String, JsonNode> byName = new java.util.TreeMap<>();
    for (Iterator<Map.Entry<String, JsonNode>> it = stats.fields(); it.hasNext(); ) {
      Map.Entry<String, JsonNode> e = it.next();
      Column c = schema.byId(Integer.parseInt(e.getKey()));
      byName.put(c == null ? "#" + e.getKey() : c.name(), e.getValue());
    }
    StringBuilder sb = new StringBuilder("{");
    for (Map.Entry<String, JsonNode> e : byName.entrySet()) {
      if (sb.length() > 1) sb.append(", ");
      sb.append(CanonicalJson.write(com.fasterxml.jackson.databind.node.TextNode.valueOf(e.getKey()))).append(": ");
      dumps(e.getValue(), sb);
    }
    return sb.append('}').toString();
  }

  private static void dumps(JsonNode n, StringBuilder sb) {
    if (n.isObject()) {
      Map<String, JsonNode> kv = new java.util.TreeMap<>();
      n.fields().forEachRemaining(e -> kv.put(e.getKey(), e.getValue()));
      sb.append('{');
      boolean first = true;
      for (Map.Entry<String, JsonNode> e : kv.entrySet()) {
        if (!first) sb.append(", ");
        first = false;
        sb.append(CanonicalJson.write(com.fasterxml.jackson.databind.node.TextNode.valueOf(e.getKey()))).append(": ");
        dumps(e.getValue(), sb);
      }
      sb.append('}');
    } else if (n.isArray()) {
      sb.append('[');
      for (int i = 0; i < n.size(); i++) {
        if (i > 0) sb.append(", ");
        dumps(n.get(i), sb);
      }
      sb.append(']');
    } else {
      sb.append(CanonicalJson.write(n));
    }
  }

  static List<InternalRow> tablets(TableState st) {
    Map<String, long[]> by = new LinkedHashMap<>();      // rowsets rows deleted redo undo base index delta
    for (String t : Pruning.tablets(new Schema(st.schema()), st.partitioning(), Map.of())) by.put(t, new long[8]);
    for (Figures f : sorted(st)) {
      long[] a = by.computeIfAbsent(f.rs.tablet(), k -> new long[8]);
      long[] add = {1, f.rs.numRows(), f.deleted, f.redoFiles, f.undoFiles, f.baseBytes, f.indexBytes, f.deltaBytes};
      for (int i = 0; i < 8; i++) a[i] += add[i];
    }
    List<InternalRow> out = new ArrayList<>();
    for (Map.Entry<String, long[]> e : by.entrySet()) {
      long[] a = e.getValue();
      out.add(new GenericInternalRow(new Object[] {str(e.getKey()), a[0], a[1], a[1] - a[2], a[2],
          a[1] == 0 ? 0.0 : (double) a[2] / a[1], a[3], a[4], a[5], a[6], a[7], a[5] + a[6] + a[7]}));
    }
    return out;
  }

  static List<InternalRow> deltas(TableState st) {
    Schema schema = new Schema(st.schema());
    List<InternalRow> out = new ArrayList<>();
    for (RowSet rs : st.rowsets()) {
      for (DeltaFile d : st.deltasOf(rs.id())) {
        List<String> cols = new ArrayList<>();
        for (Map.Entry<Integer, Long> e : d.updateCounts().entrySet()) {
          if (e.getValue() == 0) continue;
          Column c = schema.byId(e.getKey());
          cols.add(c == null ? "#" + e.getKey() : c.name());
        }
        cols.sort(null);
        out.add(new GenericInternalRow(new Object[] {str(d.path()), str(d.kind()), str(d.rowset()), str(rs.tablet()),
            d.numRecords(), d.deleteCount(), d.reinsertCount(),
            new GenericArrayData(cols.stream().map(UTF8String::fromString).toArray()), d.size(),
            d.minTs() == 0 ? null : d.minTs(), d.maxTs() == 0 ? null : d.maxTs()}));
      }
    }
    return out;
  }

  static List<InternalRow> files(TableState st) {
    List<InternalRow> out = new ArrayList<>();
    for (RowSet rs : st.rowsets()) {
      for (FileRef f : rs.base()) out.add(file(f.path(), "base", rs, f.size(), f.crc32()));
      out.add(file(rs.pkIndex().path(), "pk_index", rs, rs.pkIndex().size(), rs.pkIndex().crc32()));
      if (rs.bloom() != null) out.add(file(rs.bloom().path(), "bloom", rs, rs.bloom().size(), rs.bloom().crc32()));
      for (DeltaFile d : st.deltasOf(rs.id())) out.add(file(d.path(), d.kind(), rs, d.size(), d.crc32()));
    }
    return out;
  }

  private static InternalRow file(String path, String kind, RowSet rs, long size, Long crc32) {
    return new GenericInternalRow(new Object[] {str(path), str(kind), str(rs.id()), str(rs.tablet()), size, crc32});
  }
}

package tableformat.connector;

import org.apache.spark.sql.execution.vectorized.OnHeapColumnVector;
import org.apache.spark.sql.types.DataTypes;
import tableformat.deltas.DeltasCheck;
import tableformat.parquet.ParquetCheck;
import tableformat.vectors.PatchedColumnVector;
import tableformat.vectors.RemappedColumnVector;

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

    DeltasCheck.main(args);
    closing();
    strictPlan();
    if (args.length > 0) ParquetCheck.failedConstructor(args[0]);
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

  /** A plan with one field taken out, or one unknown added, at each level, is refused by name. */
  private static void strictPlan() {
    String delta = "{\"path\":\"file:/d\",\"size\":10,\"order\":0,\"min_ts\":1,\"max_ts\":2,\"has_ts\":false,"
        + "\"updates\":[1],\"deletes\":true}";
    String good = "{\"version\":3,\"read_ts\":null,\"columns\":[{\"id\":1,\"name\":\"v\",\"type\":\"double\","
        + "\"nullable\":true,\"default\":null}],\"rowsets\":[{\"id\":\"r\",\"num_rows\":5,\"base\":[{\"path\":"
        + "\"file:/b\",\"size\":20,\"columns\":[1],\"crc32\":null}],\"redo\":[" + delta + "],\"undo\":[],\"missing\":[],"
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

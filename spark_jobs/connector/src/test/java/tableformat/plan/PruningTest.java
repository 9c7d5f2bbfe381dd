package tableformat.plan;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import tableformat.log.TestLog;

/** Tablet pruning (§4.2), key intervals and statistics pruning (§8.2) with §13's value semantics. */
class PruningTest {
  private static final JsonNode META = TestLog.metadata().get("metadata");
  private static final Schema SCHEMA = new Schema(META.get("schema"));

  private static Map<String, Bounds> bounds(String filter) {
    return Bounds.of(FilterParser.parse(SCHEMA, TestLog.json(filter)));
  }

  private static List<String> tablets(String filter) {
    return Pruning.tablets(SCHEMA, META.get("partitioning"), bounds(filter));
  }

  @Test
  void rangePartitionsArePrunedByTheKeyInterval() {
    assertEquals(List.of("r0", "r1"), tablets("[]"));
    assertEquals(List.of("r0"), tablets("[['k','<',100]]"));
    assertEquals(List.of("r0", "r1"), tablets("[['k','<=',100]]"));
    assertEquals(List.of("r1"), tablets("[['k','>=',100],['k','<',500]]"));
    assertEquals(List.of("r0"), tablets("[['k','in',[3,7,99]]]"));
    assertEquals(List.of("r0", "r1"), tablets("[['k','!=',5]]"));
  }

  @Test
  void aFloatLiteralOnAnIntKeyRoundsToTheKeysItAdmits() {
    assertEquals(List.of("r1"), tablets("[['k','>',99.5]]"));     // k >= 100
    assertTrue(bounds("[['k','=',99.5]]").get("k").empty);
  }

  @Test
  void contradictionsAreEmpty() {
    assertTrue(bounds("[['k','>',5],['k','<',5]]").get("k").empty);
    assertTrue(bounds("[['k','>=',5],['k','<',5]]").get("k").empty);
    assertFalse(bounds("[['k','>=',5],['k','<=',5]]").get("k").empty);
    assertTrue(bounds("[['k','in',[1,2]],['k','>',2]]").get("k").empty);
    assertTrue(bounds("[['v','is null'],['v','>',1.0]]").get("v").empty);
  }

  @Test
  void nanAndSignedZerosFollowSection13() {
    assertEquals(0, Domain.compare(-0.0, 0.0));               // -0.0 equals 0.0
    assertTrue(Domain.compare(Double.NaN, Double.POSITIVE_INFINITY) > 0);   // NaN sorts above everything
    assertEquals(0, Domain.compare(Double.NaN, Double.NaN));
    assertTrue(Domain.compare("\u00e9", "z") > 0);             // strings by UTF-8 bytes
  }

  private static boolean mayMatch(String stats, long rows, String filter) {
    Column v = SCHEMA.column("v");
    return Pruning.statsMayMatch(v, TestLog.json(stats), rows, bounds(filter).get("v"));
  }

  @Test
  void statisticsPruneWhatTheyExclude() {
    String s = "{'nulls':0,'nan':0,'min':1.0,'max':2.0}";
    assertTrue(mayMatch(s, 10, "[['v','>=',1.5]]"));
    assertFalse(mayMatch(s, 10, "[['v','>',2.0]]"));
    assertTrue(mayMatch(s, 10, "[['v','>=',2.0]]"));
    assertFalse(mayMatch(s, 10, "[['v','in',[0.5,3.0]]]"));
    assertFalse(mayMatch(s, 10, "[['v','is null']]"));
    assertTrue(mayMatch("{'nulls':10}", 10, "[['v','is null']]"));
    assertFalse(mayMatch("{'nulls':10}", 10, "[['v','is not null']]"));
  }

  @Test
  void zeroStatisticsAdmitBothZeros() {
    assertTrue(mayMatch("{'nulls':0,'nan':0,'min':-0.0,'max':-0.0}", 3, "[['v','=',0.0]]"));
    assertTrue(mayMatch("{'nulls':0,'nan':0,'min':0.0,'max':1.0}", 3, "[['v','<=',-0.0]]"));
  }

  @Test
  void theKeyRangeOfAnEqualityIsOneKey() {
    byte[][] r = Pruning.keyRange(SCHEMA.key, bounds("[['k','=',5]]"));
    assertEquals(TestLog.key(5), java.util.HexFormat.of().formatHex(r[0]));
    assertEquals(TestLog.key(5) + "00", java.util.HexFormat.of().formatHex(r[1]));
  }
}

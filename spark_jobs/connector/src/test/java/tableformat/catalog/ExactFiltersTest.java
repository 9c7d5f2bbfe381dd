package tableformat.catalog;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.util.Arrays;
import org.apache.spark.sql.connector.expressions.Expression;
import org.apache.spark.sql.connector.expressions.Expressions;
import org.apache.spark.sql.connector.expressions.GeneralScalarExpression;
import org.apache.spark.sql.connector.expressions.LiteralValue;
import org.apache.spark.sql.connector.expressions.filter.And;
import org.apache.spark.sql.connector.expressions.filter.Not;
import org.apache.spark.sql.connector.expressions.filter.Or;
import org.apache.spark.sql.connector.expressions.filter.Predicate;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.unsafe.types.UTF8String;
import org.junit.jupiter.api.Test;

/** DSv2 predicates as the V1 filters of the Parquet pushdown: each exactly its predicate, so an OR
 *  with a side that does not convert gives nothing (Spark's toV1 gave that OR's other side). */
class ExactFiltersTest {
  private static final StructType SCHEMA = new StructType().add("k", DataTypes.LongType).add("a", DataTypes.LongType)
      .add("b", DataTypes.LongType).add("n", DataTypes.IntegerType).add("s", DataTypes.StringType)
      .add("ts", DataTypes.TimestampType).add("x", DataTypes.DoubleType);
  private static final Expression K = Expressions.column("k"), A = Expressions.column("a"),
      B = Expressions.column("b"), TS = Expressions.column("ts");

  private static Expression lit(Object v, DataType t) {
    return new LiteralValue<>(v, t);
  }

  private static Predicate p(String op, Expression... children) {
    return new Predicate(op, children);
  }

  private static String v1(Predicate... ps) {
    return Arrays.toString(ExactFilters.of(SCHEMA, ps));
  }

  private static final Predicate K_IS_1 = p("=", K, lit(1L, DataTypes.LongType));
  private static final Predicate TS_AFTER = p(">", TS, lit(5L, DataTypes.TimestampType));

  @Test
  void anOrOrNotWithASideThatDoesNotConvertGivesNothing() {
    assertEquals("[]", v1(new Or(p(">", A, B), K_IS_1)));
    assertEquals("[]", v1(new Or(K_IS_1, p(">", A, B))));
    assertEquals("[]", v1(new Or(TS_AFTER, K_IS_1)));
    assertEquals("[]", v1(new Not(TS_AFTER)));
    assertEquals("[]", v1(new Not(new Or(p(">", A, B), K_IS_1))));
    assertEquals("[]", v1(new Or(new And(TS_AFTER, K_IS_1), K_IS_1)));
    assertEquals("[]", v1(new Or(p("=", new GeneralScalarExpression("UPPER", new Expression[] {Expressions.column("s")}), lit(UTF8String.fromString("ABC"),
        DataTypes.StringType)), K_IS_1)));
  }

  @Test
  void aTopLevelAndGivesEachSideThatConverts() {
    assertEquals("[EqualTo(k,1)]", v1(new And(TS_AFTER, K_IS_1)));
    assertEquals("[EqualTo(k,1), LessThan(a,3)]", v1(new And(K_IS_1, p("<", A, lit(3L, DataTypes.LongType))), TS_AFTER));
  }

  @Test
  void exactPredicatesConvertWholeWithALiteralOnTheLeftTurnedRound() {
    assertEquals("[GreaterThan(k,3)]", v1(p("<", lit(3L, DataTypes.LongType), K)));
    assertEquals("[Or(EqualTo(k,1),LessThanOrEqual(n,2))]",
        v1(new Or(K_IS_1, p("<=", Expressions.column("n"), lit(2, DataTypes.IntegerType)))));
    assertEquals("[Not(EqualTo(k,1))]", v1(new Not(K_IS_1)));
    assertEquals("[Or(And(EqualTo(k,1),IsNull(a)),IsNotNull(b))]",
        v1(new Or(new And(K_IS_1, p("IS_NULL", A)), p("IS_NOT_NULL", B))));
    assertEquals("[In(s, [caf\u00e9,x])]", v1(p("IN", Expressions.column("s"),
        lit(UTF8String.fromString("caf\u00e9"), DataTypes.StringType), lit(UTF8String.fromString("x"), DataTypes.StringType))));
    assertEquals("[EqualNullSafe(k,2)]", v1(p("<=>", K, lit(2L, DataTypes.LongType))));
  }

  @Test
  void aLiteralOfAnotherTypeANullADateTimeOrFloatIsNotPushed() {
    assertEquals("[]", v1(p("=", Expressions.column("n"), lit(1L, DataTypes.LongType))));
    assertEquals("[]", v1(p("=", K, lit(null, DataTypes.LongType))));
    assertEquals("[]", v1(p("IN", K, lit(1L, DataTypes.LongType), lit(null, DataTypes.LongType))));
    assertEquals("[]", v1(TS_AFTER));
    assertEquals("[]", v1(p("=", Expressions.column("x"), lit(1.0, DataTypes.DoubleType))));
    assertEquals("[]", v1(p("=", Expressions.column("r.k"), lit(1L, DataTypes.LongType))));     // nested
    assertEquals("[]", v1(p("=", Expressions.column("zz"), lit(1L, DataTypes.LongType))));
  }
}

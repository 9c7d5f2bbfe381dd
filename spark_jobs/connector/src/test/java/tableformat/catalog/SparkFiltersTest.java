package tableformat.catalog;

import static org.junit.jupiter.api.Assertions.assertEquals;

import com.fasterxml.jackson.databind.node.ArrayNode;
import java.time.Instant;
import java.time.LocalDate;
import org.apache.spark.sql.connector.expressions.Expression;
import org.apache.spark.sql.connector.expressions.Expressions;
import org.apache.spark.sql.connector.expressions.LiteralValue;
import org.apache.spark.sql.connector.expressions.filter.And;
import org.apache.spark.sql.connector.expressions.filter.Predicate;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.unsafe.types.UTF8String;
import org.junit.jupiter.api.Test;
import tableformat.log.TestLog;
import tableformat.plan.FilterParser;
import tableformat.plan.Schema;

/** DSv2 predicates as planner terms (issue #44 items 3 and 4): dates by Spark's proleptic day
 *  number and timestamps by UTC micros, exactly, whatever the calendar or the session's zone. */
class SparkFiltersTest {
  private static final Schema SCHEMA = new Schema(TestLog.json("{'columns':["
      + "{'id':0,'name':'d','type':'date','nullable':false},"
      + "{'id':1,'name':'ts','type':'unixtime_micros','nullable':true},"
      + "{'id':2,'name':'s','type':'string','nullable':true}],'primary_key':['d']}"));

  private static Expression lit(Object v, DataType t) {
    return new LiteralValue<>(v, t);
  }

  private static Predicate p(String op, Expression... children) {
    return new Predicate(op, children);
  }

  private static int day(int y, int m, int d) {
    return (int) LocalDate.of(y, m, d).toEpochDay();
  }

  private static String terms(Predicate... ps) {
    return SparkFilters.terms(SCHEMA, ps).toString().replace('"', '\'');
  }

  @Test
  void datesAreProlepticDayNumbersIncludingTheDaysJavaSqlDateLoses() {
    Expression d = Expressions.column("d");
    assertEquals("[['d','=',{'date':'1582-10-10'}]]", terms(p("=", d, lit(day(1582, 10, 10), DataTypes.DateType))));
    assertEquals("[['d','in',[{'date':'1582-10-05'},{'date':'1582-10-14'}]]]",
        terms(p("IN", d, lit(day(1582, 10, 5), DataTypes.DateType), lit(null, DataTypes.DateType),
            lit(day(1582, 10, 14), DataTypes.DateType))));
    assertEquals("[['d','>=',{'date':'0001-01-01'}],['d','<',{'date':'9999-12-31'}]]",
        terms(new And(p(">=", d, lit(day(1, 1, 1), DataTypes.DateType)), p("<", d, lit(day(9999, 12, 31), DataTypes.DateType)))));
    // the planner places it on the same day number (no calendar in between)
    ArrayNode t = SparkFilters.terms(SCHEMA, new Predicate[] {p("=", d, lit(day(1582, 10, 10), DataTypes.DateType))});
    assertEquals((long) day(1582, 10, 10), FilterParser.parse(SCHEMA, t).get(0).value());
  }

  @Test
  void timestampsAreUtcMicrosAndALiteralOnTheLeftTurnsRound() {
    Expression ts = Expressions.column("ts");
    long year1 = Instant.parse("0001-01-01T00:00:00Z").getEpochSecond() * 1_000_000L;
    assertEquals("[['ts','<',-62135596800000000]]", terms(p("<", ts, lit(year1, DataTypes.TimestampType))));
    assertEquals("[['ts','<=',1709280000000000]]", terms(p(">=", lit(1709280000000000L, DataTypes.TimestampType), ts)));
    assertEquals("[['ts','=',5]]", terms(p("<=>", ts, lit(5L, DataTypes.TimestampType))));
  }

  @Test
  void aLiteralOfAnotherTypeOrNullPrunesNothing() {
    Expression ts = Expressions.column("ts"), d = Expressions.column("d");
    assertEquals("[]", terms(p("=", ts, lit(5L, DataTypes.TimestampNTZType))));     // local micros: not an instant
    assertEquals("[]", terms(p("=", ts, lit(day(2024, 1, 1), DataTypes.DateType))));
    assertEquals("[]", terms(p("=", d, lit(5L, DataTypes.TimestampType))));
    assertEquals("[]", terms(p("<=>", ts, lit(null, DataTypes.TimestampType))));
    assertEquals("[]", terms(p("IN", d, lit(day(2024, 1, 1), DataTypes.DateType), lit(1L, DataTypes.TimestampType))));
    assertEquals("[]", terms(p("OR", p("=", d, lit(1, DataTypes.DateType)), p("=", d, lit(2, DataTypes.DateType)))));
    assertEquals("[['s','=','caf\u00e9'],['s','is not null']]", terms(p("=", Expressions.column("s"),
        lit(UTF8String.fromString("caf\u00e9"), DataTypes.StringType)), p("IS_NOT_NULL", Expressions.column("s"))));
  }
}

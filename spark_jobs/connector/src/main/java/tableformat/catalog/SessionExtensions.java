package tableformat.catalog;

import org.apache.spark.sql.SparkSessionExtensions;
import scala.runtime.AbstractFunction1;
import scala.runtime.BoxedUnit;

/**
 * {@code spark.sql.extensions=tableformat.catalog.SessionExtensions}: the rule that sends the
 * Python data source's append ({@code df.write.format("tableformat").mode("append")}) through the
 * JVM writer and committer ({@link DataSourceAppend}). {@code spark_jobs.session.get_spark} sets it
 * whenever it loads the connector's jar.
 */
public final class SessionExtensions extends AbstractFunction1<SparkSessionExtensions, BoxedUnit> {
  @Override
  public BoxedUnit apply(SparkSessionExtensions extensions) {
    extensions.injectResolutionRule(new AbstractFunction1<>() {
      @Override
      public org.apache.spark.sql.catalyst.rules.Rule<org.apache.spark.sql.catalyst.plans.logical.LogicalPlan> apply(
          org.apache.spark.sql.SparkSession session) {
        return new DataSourceAppend();
      }
    });
    return BoxedUnit.UNIT;
  }
}

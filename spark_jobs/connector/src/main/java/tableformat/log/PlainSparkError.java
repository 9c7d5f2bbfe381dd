package tableformat.log;

import java.util.Map;
import org.apache.spark.SparkThrowable;

/**
 * A {@link SparkThrowable} whose text is its own message, so that {@code spark-sql} prints it once
 * without a stack trace. It claims a condition Spark registers with the template {@code <message>}:
 * under an unregistered one, PySpark's {@code getMessage()} fails with INTERNAL_ERROR and
 * {@code spark.sql.error.messageFormat=STANDARD|MINIMAL} prints no text.
 */
public interface PlainSparkError extends SparkThrowable {
  /** Registered by Spark (error-conditions.json) with the message template {@code <message>} alone. */
  String CONDITION = "_LEGACY_ERROR_TEMP_3104";

  String getMessage();

  @Override
  default String getCondition() {
    return CONDITION;
  }

  @Override
  default Map<String, String> getMessageParameters() {
    return Map.of("message", getMessage());
  }

  @Override
  default boolean isInternalError() {
    return false;
  }
}

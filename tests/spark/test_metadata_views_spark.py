"""spark_jobs.metadata_tables: Table.inspect as Spark views."""
import pytest

import tableformat as tf
from helpers import metrics_partitioning, metrics_rows, metrics_schema


def test_views_equal_inspect(spark, table_uri):
    from spark_jobs.metadata_tables import register_metadata_views
    t = tf.create_table(table_uri, metrics_schema(), metrics_partitioning())
    rows = metrics_rows(600)
    t.insert(rows)
    t.delete(rows.slice(0, 60).select(["host", "metric", "time"]))
    views = register_metadata_views(spark, "metrics", table_uri)
    assert views == [f"metrics__{k}" for k in ("history", "tablets", "rowsets", "deltas", "files", "tags")]
    r = t.inspect("rowsets")
    got = spark.sql("SELECT sum(rows), sum(deleted_rows), count(*) FROM metrics__rowsets").collect()[0]
    assert tuple(got) == (sum(r.column("rows").to_pylist()), 60, r.num_rows)
    first = spark.sql("SELECT min_key.host AS h FROM metrics__rowsets ORDER BY min_key_hex LIMIT 1").collect()[0]
    assert first.h == r.sort_by("min_key_hex").column("min_key")[0].as_py()["host"]
    ops = [x.operation for x in spark.sql("SELECT operation FROM metrics__history ORDER BY version").collect()]
    assert ops == ["CREATE TABLE", "INSERT", "DELETE"]
    assert spark.sql("SELECT count(*) FROM metrics__tags").collect()[0][0] == 0
    assert spark.sql("SELECT count(*) FROM metrics__files WHERE kind = 'redo'").collect()[0][0] == \
        t.inspect("deltas").num_rows


def test_bad_arguments(spark, table_uri):
    from spark_jobs.metadata_tables import register_metadata_views
    tf.create_table(table_uri, metrics_schema(), metrics_partitioning())
    with pytest.raises(tf.InvalidOptionError, match="kinds"):
        register_metadata_views(spark, "m", table_uri, kinds=["snapshots"])
    with pytest.raises(tf.InvalidOptionError, match="view name"):
        register_metadata_views(spark, "m; drop", table_uri)
    with pytest.raises(tf.TableNotFoundError):
        register_metadata_views(spark, "m", table_uri + "-nope")

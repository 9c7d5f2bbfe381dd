"""Delta Lake in the Spark session: delta-spark's jars, SQL extension and catalog, only when asked."""
import pytest

from spark_jobs.session import DELTA_JARS_VERSION, delta_available, delta_package, get_spark, has_delta

pytestmark = pytest.mark.skipif(not delta_available(), reason="delta-spark is not installed")


def test_delta_package_names_the_spark_minor_and_the_pinned_jars():
    assert delta_package("4.2.0") == f"io.delta:delta-spark_4.2_2.13:{DELTA_JARS_VERSION}"
    assert delta_package("4.0.1") == f"io.delta:delta-spark_4.0_2.13:{DELTA_JARS_VERSION}"


def test_session_has_delta_and_composes_packages(spark, tmp_path):
    assert has_delta(spark)
    pkgs = spark.conf.get("spark.jars.packages").split(",")
    assert delta_package() in pkgs
    assert "org.apache.hadoop:hadoop-client-api" in spark.conf.get("spark.jars.excludes")
    # Delta's state reconstruction in one partition per core, not its 50 (time travel 5-10x faster)
    assert spark.conf.get("spark.databricks.delta.snapshotPartitions") == str(spark.sparkContext.defaultParallelism)
    # getOrCreate hands back the running session: jars cannot be added to a live JVM
    assert get_spark("again", "local[2]", delta=True) is spark
    p = str(tmp_path / "d")
    spark.range(5).write.format("delta").save(p)
    from delta.tables import DeltaTable
    assert DeltaTable.forPath(spark, p).toDF().count() == 5
    spark.sql(f"DELETE FROM delta.`{p}` WHERE id = 2")
    assert sorted(r.id for r in spark.sql(f"SELECT id FROM delta.`{p}` VERSION AS OF 0").collect()) == [0, 1, 2, 3, 4]
    assert sorted(r.id for r in spark.read.format("delta").load(p).collect()) == [0, 1, 3, 4]

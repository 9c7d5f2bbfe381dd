"""Issue #45 on S3 through s3a: pyspark's own `bin/spark-sql`, no Python reachable, writes a table
on the loopback S3 server through the catalog (CREATE NAMESPACE and TABLE with a key, INSERT, a
duplicate INSERT refused, ALTER) that the engine, opened through s3fs with the same storage
options, reads version by version exactly as `VERSION AS OF` does."""
import pytest

import tableformat as tf

from helpers import run_spark_sql, sql_user_history

pytest.importorskip("pyspark")


def s3a_conf(root: str, opts: dict) -> dict:
    """The catalog over s3a://<bucket>/wh, with the table's own storage options (`storage.<key>`)
    and the s3a jars as README's spark-submit asks for them."""
    from spark_jobs.session import S3A_EXCLUDES, flat_storage_options, s3a_packages
    conf = {f"spark.sql.catalog.tf.storage.{k}": v for k, v in flat_storage_options(opts).items()}
    conf["spark.sql.catalog.tf.warehouse"] = f"s3a://{root[len('s3://'):]}/wh"
    conf["spark.jars.packages"] = ",".join(s3a_packages())
    conf["spark.jars.excludes"] = ",".join(S3A_EXCLUDES)
    conf["spark.sql.session.timeZone"] = "UTC"
    return conf


def test_spark_sql_creates_inserts_alters_and_travels_on_s3a(connector_jar, s3_table_root, tmp_path):
    root, opts = s3_table_root
    conf = s3a_conf(root, opts)
    sql_user_history(connector_jar, tmp_path, conf, lambda: tf.open_table(f"{root}/wh/ns/t", storage_options=opts))


def test_the_s3_requests_of_one_sql_insert(connector_jar, logged_s3_root, tmp_path):
    """One INSERT of 3000 rows into 3 tablets, in a spark-sql of its own (the catalog's table load
    included), counted where the server answers: a PUT per file and no probe of a new file's
    name (s3a's create performance mode: it was a HEAD and a LIST per file, 37 requests in all)."""
    import collections

    from helpers import server_requests
    root, opts, log = logged_s3_root
    conf = s3a_conf(root, opts)
    run_spark_sql(connector_jar, tmp_path, conf, [
        "CREATE NAMESPACE tf.ns;",
        "CREATE TABLE tf.ns.t (k BIGINT NOT NULL, v DOUBLE, CONSTRAINT pk PRIMARY KEY (k)) PARTITIONED BY (bucket(3, k));",
        "INSERT INTO tf.ns.t SELECT id, id * 0.25 FROM range(3000);"])
    before = len(server_requests(log))
    proc = run_spark_sql(connector_jar, tmp_path, conf, ["INSERT INTO tf.ns.t SELECT id + 3000, id * 0.5 FROM range(3000);"])
    assert proc.returncode == 0, proc.stderr[-3000:]
    reqs = server_requests(log)[before:]
    counts = collections.Counter(("LIST" if m == "GET" and ("list-type=" in p or "prefix=" in p) else m) for m, p, _ in reqs)
    print("one INSERT's S3 requests:", dict(counts), "total", len(reqs))
    tablets = [(m, p) for m, p, _ in reqs if "/tablets/" in p]
    assert tablets and all(m == "PUT" for m, _ in tablets), tablets      # new files: no probe before the upload
    assert counts["PUT"] == 3 * 3 + 1                                     # base, PK index, bloom per tablet; the commit
    assert len(reqs) <= 19 and counts["LIST"] <= 3 and counts["HEAD"] <= 1, dict(counts)
    t = tf.open_table(f"{root}/wh/ns/t", storage_options=opts)
    assert t.version == 2 and t.scan().count() == 6000 and t.check().ok

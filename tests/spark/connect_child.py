"""A driver on a Spark Connect session that tests/spark/test_spark_connect.py starts as a subprocess
(a Connect session cannot start in a process that holds the classic session of the other tests).

    python connect_child.py '<json config>'

It starts `get_spark(remote="local[2]")` (a Connect server in this process, the client talking to
it over gRPC) and runs each step on the tables the test made: what a step read goes to
`<out>/<step>.parquet`, what it returned to `<out>/<step>.json`, and every step's outcome ("ok" or
the error's type and message) to `<out>/steps.json`.
"""
import json
import os
import sys
import traceback

import pyarrow as pa
import pyarrow.parquet as pq


def main(cfg: dict) -> None:
    from spark_jobs.session import get_spark
    spark = get_spark("tableformat-connect", remote="local[2]")
    out, outcomes = cfg["out"], {}
    for name, step in STEPS.items():
        try:
            got = step(spark, cfg)
            if isinstance(got, pa.Table):
                pq.write_table(got, os.path.join(out, f"{name}.parquet"))
            elif got is not None:
                with open(os.path.join(out, f"{name}.json"), "w") as f:
                    json.dump(got, f, default=str)
            outcomes[name] = "ok"
        except Exception as e:  # noqa: BLE001 - reported to the test, which asserts on it
            outcomes[name] = f"{type(e).__name__}: {e}"
            traceback.print_exc()
    with open(os.path.join(out, "steps.json"), "w") as f:
        json.dump(outcomes, f)
    spark.stop()


def session(spark, cfg):
    from spark_jobs.connect import is_connect
    return {"connect": is_connect(spark), "class": f"{type(spark).__module__}.{type(spark).__name__}"}


def read_table(spark, cfg):
    from spark_jobs.read import read_table
    return read_table(spark, cfg["src"]).toArrow()


def format_read(spark, cfg):
    return spark.read.format("tableformat").load(cfg["src"]).toArrow()


def register(spark, cfg):
    """spark_jobs.register on a Connect session get_spark did not build (a new session of the server):
    format("tableformat") is unknown before it, and reads after it."""
    import spark_jobs
    other = spark.newSession()
    try:
        other.read.format("tableformat").load(cfg["src"]).count()
        before = "ok"
    except Exception as e:  # noqa: BLE001 - the test asserts on it
        before = f"{type(e).__name__}: {e}"
    spark_jobs.register(other)
    return {"before": before, "rows": other.read.format("tableformat").load(cfg["src"]).toArrow().to_pylist()}


def catalog(spark, cfg):
    spark.conf.set("spark.sql.catalog.lake", "tableformat.catalog.TableFormatCatalog")
    spark.conf.set("spark.sql.catalog.lake.warehouse", os.path.dirname(cfg["src"]))
    return spark.sql(f"SELECT * FROM lake.{os.path.basename(cfg['src'])}").toArrow()


def insert(spark, cfg):
    from spark_jobs.insert import partitioned_insert
    return partitioned_insert(spark, spark.read.parquet(cfg["insert_input"]), cfg["insert"]).version


def merge(spark, cfg):
    from spark_jobs.merge import mutation_merge
    return mutation_merge(spark, spark.read.parquet(cfg["merge_input"]), cfg["merge"], op_column="op").version


def format_write(spark, cfg):
    spark.read.parquet(cfg["insert_input"]).write.format("tableformat").mode("append").save(cfg["format_write"])


def stream_source(spark, cfg):
    q = (spark.readStream.format("tableformat").option("readChangeFeed", "true").option("startingVersion", 1)
         .load(cfg["src"]).writeStream.format("parquet").trigger(availableNow=True)
         .option("checkpointLocation", os.path.join(cfg["out"], "ckpt_source"))
         .start(os.path.join(cfg["out"], "stream_source")))
    q.awaitTermination()


def _sink_input(spark, cfg):
    return (spark.readStream.schema("k long, a long, op string").option("maxFilesPerTrigger", 1)
            .parquet(cfg["sink_input"]))            # one micro-batch per file


def sink(spark, cfg):
    q = (_sink_input(spark, cfg).writeStream.format("tableformat").option("txnAppId", "connect-sink")
         .option("opColumn", "op").option("checkpointLocation", os.path.join(cfg["out"], "ckpt_sink"))
         .trigger(availableNow=True).start(cfg["sink"]))
    q.awaitTermination()


def upsert_sink(spark, cfg):
    from spark_jobs.sink import upsert_stream
    upsert_stream(_sink_input(spark, cfg), cfg["upsert_sink"], os.path.join(cfg["out"], "ckpt_upsert"),
                  trigger={"availableNow": True}, op_column="op", app_id="connect-upsert").awaitTermination()


def upsert_sink_query_id(spark, cfg):
    from spark_jobs.sink import upsert_stream
    upsert_stream(_sink_input(spark, cfg), cfg["upsert_sink_query_id"], os.path.join(cfg["out"], "ckpt_qid"),
                  trigger={"availableNow": True}, op_column="op").awaitTermination()


def read_changes(spark, cfg):
    from spark_jobs.read import read_changes
    return read_changes(spark, cfg["src"], start=0).toArrow()


def compact(spark, cfg):
    from spark_jobs.compaction import compact_table
    res = compact_table(spark, cfg["compact"])
    return {k: res[k] for k in ("actions", "committed", "results")}


def change_export(spark, cfg):
    from spark_jobs.export import change_export
    return change_export(spark, cfg["src"], os.path.join(cfg["out"], "exported"))


def stream_export(spark, cfg):
    from spark_jobs.stream_export import stream_export
    out = os.path.join(cfg["out"], "stream_exported")
    res = stream_export(spark, cfg["src"], out, starting_version=1)
    return {"result": res, "rows": spark.read.parquet(out).count()}


def backfill(spark, cfg):
    from spark_jobs.backfill import time_travel_backfill
    time_travel_backfill(spark, cfg["src"], 1, os.path.join(cfg["out"], "backfilled"),
                         sql="SELECT k, a FROM source WHERE a >= 0")
    return pq.read_table(os.path.join(cfg["out"], "backfilled"))


def metadata_views(spark, cfg):
    from spark_jobs.metadata_tables import register_metadata_views
    register_metadata_views(spark, "src", cfg["src"])
    return spark.sql("SELECT version FROM src__history").toArrow()


def typed_jvm_error(spark, cfg):
    """The catalog's TagNotFoundError over Connect (an UnknownException naming the JVM's class in its
    text) given back by typed_error: it gave None."""
    from spark_jobs.errors import typed_error
    spark.conf.set("spark.sql.catalog.lake", "tableformat.catalog.TableFormatCatalog")
    spark.conf.set("spark.sql.catalog.lake.warehouse", os.path.dirname(cfg["src"]))
    try:
        spark.sql(f"SELECT * FROM lake.{os.path.basename(cfg['src'])} VERSION AS OF 'nope'").collect()
    except Exception as e:  # noqa: BLE001 - typed below, the test asserts on it
        got = typed_error(e)
        return {"raised": type(e).__name__, "type": type(got).__name__, "message": str(got)}
    return {"raised": None}


STEPS = {"session": session, "read_table": read_table, "format_read": format_read, "register": register,
         "catalog": catalog,
         "insert": insert, "merge": merge, "format_write": format_write, "stream_source": stream_source,
         "sink": sink, "upsert_sink": upsert_sink, "upsert_sink_query_id": upsert_sink_query_id,
         "read_changes": read_changes, "compact": compact, "change_export": change_export,
         "stream_export": stream_export, "backfill": backfill, "metadata_views": metadata_views,
         "typed_jvm_error": typed_jvm_error}


if __name__ == "__main__":
    main(json.loads(sys.argv[1]))

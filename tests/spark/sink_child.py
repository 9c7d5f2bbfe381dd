"""A driver the sink's kill -9 tests start as a subprocess (tests/spark/test_spark_sink.py, test_spark_sink_e2e.py).

    python sink_child.py '<json config>'

It runs one streaming query with Trigger.AvailableNow into a table through spark_jobs.sink.UpsertSink
and exits when the query ends. The config's `pause` ({"point": ..., "batch": N or "any"}) makes it write
the file `signal` at that point of batch N (or of the first batch) and then wait, so the test can
kill -9 it there:
- "batch-start": foreachBatch was called for batch N (nothing of it written yet);
- "mid-batch": the same, without waiting: the test kills it while the batch is written;
- "before-commit": the batch's files are written, its commit is not (Table.commit_fragments is
  wrapped here, in the test's driver, not in the sink);
- "after-commit": the commit landed; Spark has not yet recorded the batch in its checkpoint.
The source is either a directory of Parquet files, one per micro-batch ("files"), or a table's change
stream turned into upserts and deletes of a projection ("changes", the end-to-end test), or
README's change feed pattern, each change a delete or an upsert kept in the feed's order ("feed").
"""
import json
import os
import sys
import time


def pause(cfg, point, batch_id):
    p = cfg.get("pause") or {}
    if p.get("point") == point and p.get("batch") in (batch_id, "any") and not os.path.exists(cfg["signal"]):
        with open(cfg["signal"] + ".tmp", "w") as f:
            f.write(f"{point} {batch_id} {os.getpid()}")
        os.replace(cfg["signal"] + ".tmp", cfg["signal"])
        if point != "mid-batch":
            time.sleep(600)


def wrap_commits(cfg):
    import tableformat as tf
    original = tf.Table.commit_fragments

    def commit_fragments(self, *args, **kw):
        if kw.get("txn") is not None:
            pause(cfg, "before-commit", kw["txn"][1])
        return original(self, *args, **kw)
    tf.Table.commit_fragments = commit_fragments


def source(spark, cfg):
    if cfg["source"] == "files":
        return (spark.readStream.schema("k long, v string, seq long, op string")
                .option("maxFilesPerTrigger", 1).parquet(cfg["input"]))
    from pyspark.sql import functions as F
    if cfg["source"] == "feed":     # README's pattern: each change an op, in the feed's order
        feed = (spark.readStream.format("tableformat").option("readChangeFeed", "true")
                .option("startingVersion", 1).option("changeFeedColumns", "delta")
                .options(**cfg.get("limit", {})).load(cfg["input"]))
        return (feed.where(F.col("_change_type") != "update_preimage")
                .withColumn("op", F.when(F.col("_change_type") == "delete", "delete").otherwise("upsert"))
                .drop("_change_type", "_commit_timestamp"))
    changes = (spark.readStream.format("tableformat").option("readChangeFeed", "true")
               .option("startingVersion", 1).option("maxVersionsPerTrigger", cfg.get("versions_per_batch", 1))
               .option("changeFeedColumns", "delta").load(cfg["input"]))
    # the projection B keeps of A: its key, a derived value and A's sequence; deletes stay deletes
    return (changes.where(F.col("_change_type") != "update_preimage")
            .select("k", F.concat(F.lit("b:"), F.col("v")).alias("v"), "seq",
                    F.when(F.col("_change_type") == "delete", F.lit("delete_ignore"))
                    .otherwise(F.lit("upsert")).alias("op")))


def main():
    cfg = json.loads(sys.argv[1])
    from spark_jobs.session import get_spark
    from spark_jobs.sink import UpsertSink
    wrap_commits(cfg)
    spark = get_spark("sink-child", cfg.get("master", "local[2]"), connector=False,
                      conf={"spark.sql.shuffle.partitions": "2"})
    spark.sparkContext.setLogLevel("ERROR")
    sink = UpsertSink(cfg["table"], op_column="op", local_rows=cfg.get("local_rows", 200_000))

    def batch(df, batch_id):
        pause(cfg, "batch-start", batch_id)
        pause(cfg, "mid-batch", batch_id)
        sink(df, batch_id)
        pause(cfg, "after-commit", batch_id)
    q = (source(spark, cfg).writeStream.foreachBatch(batch).option("checkpointLocation", cfg["checkpoint"])
         .trigger(availableNow=True).start())
    q.awaitTermination()
    with open(cfg["signal"] + ".done", "w") as f:
        f.write(q.id)
    spark.stop()


if __name__ == "__main__":
    main()

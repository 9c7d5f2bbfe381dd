"""A JVM committer process the cross-process commit races start (tests/s3/test_s3a_commit_race.py,
tests/hdfs/test_hdfs_sql.py):

    python committer_child.py '<json config>'

It starts a local[1] SparkSession with the connector (and, for s3a, the s3a jars:
TABLEFORMAT_S3A=1 in its environment), sets the store's Hadoop settings (`hadoop`), writes
`ready`, waits for the file `go`, then races `threads` threads of the JVM committer
(`tableformat.commit.Committer`, through py4j) for the table at `uri`:
- "create": each thread creates the table from the `metadata` action;
- "commit": thread i commits the fragment `fragments[i]` (a Spark insert task's JSON).
It prints one JSON line, `RESULTS [...]`: per thread, what it won (create: the version; commit:
[version, attempts]) or the typed error's class name.
"""
import json
import os
import sys
import threading
import time


def main(cfg):
    from spark_jobs.errors import typed_error
    from spark_jobs.session import get_spark
    spark = get_spark("committer-child", "local[1]")
    jvm = spark.sparkContext._jvm
    hc = spark._jsc.hadoopConfiguration()
    for k, v in cfg.get("hadoop", {}).items():
        hc.set(k, v)
    jvm.tableformat.commit.Committer(cfg["uri"], hc).root()        # classes loaded before the race
    with open(cfg["ready"], "w") as f:
        f.write(str(os.getpid()))
    while not os.path.exists(cfg["go"]):
        time.sleep(0.01)
    results = [None] * cfg["threads"]

    def run(i):
        try:
            c = jvm.tableformat.commit.Committer(cfg["uri"], hc)
            if cfg["kind"] == "create":
                results[i] = c.create(cfg["metadata"], "CREATE TABLE")
            else:
                lst = jvm.java.util.ArrayList()
                lst.add(cfg["fragments"][i])
                r = c.commit(lst, "INSERT", None, None, 0)
                results[i] = [r.version(), r.attempts()]
        except Exception as e:  # noqa: BLE001 - reported by its class
            typed = typed_error(e)
            results[i] = type(typed).__name__ if typed is not None else f"{type(e).__name__}: {e}"[:2000]

    threads = [threading.Thread(target=run, args=(i,)) for i in range(cfg["threads"])]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    print("RESULTS " + json.dumps(results), flush=True)
    spark.stop()


if __name__ == "__main__":
    main(json.loads(sys.argv[1]))

"""TABLEFORMAT_S3A=1 (spark_jobs.session): the first session resolves hadoop-aws and the AWS SDK's S3
modules once, from Maven Central alone (no resolver that cannot be reached, so none of Ivy's
warnings), into a cache of its own; every later session puts those jars on the classpath with
no Ivy resolution at all. Each session then reads s3a:// from the loopback S3 server."""
import os
import subprocess
import sys
import time

import pytest

pytest.importorskip("pyspark")

CHILD = """
import os, sys
from spark_jobs.session import get_spark, s3a_settings
spark = get_spark("s3a-session", "local[1]", connector=False)
bucket, endpoint = sys.argv[1], sys.argv[2]
for k, v in s3a_settings(bucket, {"endpoint_url": endpoint, "key": "testing", "secret": "x"}).items():
    spark.conf.set(k, v)
print("LINES", spark.read.text(f"s3a://{bucket}/hello.txt").count())
"""


def session(tmp_path, bucket, endpoint):
    env = {**os.environ, "TABLEFORMAT_S3A": "1", "TABLEFORMAT_CACHE_DIR": str(tmp_path / "cache"),
           "TABLEFORMAT_CONNECTOR": "0"}
    start = time.time()
    p = subprocess.run([sys.executable, "-c", CHILD, bucket, endpoint], env=env, capture_output=True, text=True,
                       timeout=900)
    assert p.returncode == 0, p.stderr[-4000:]
    assert "LINES 2" in p.stdout, p.stdout[-2000:]
    return p.stderr, time.time() - start


def test_s3a_jars_are_resolved_once_from_maven_central_then_reused(tmp_path, s3_table_root):
    import s3fs
    root, opts = s3_table_root
    fs = s3fs.S3FileSystem(client_kwargs={"endpoint_url": opts["endpoint_url"]}, key=opts["key"], secret=opts["secret"])
    fs.pipe_file(f"{root[len('s3://'):]}/hello.txt", b"a\nb\n")
    bucket = root[len("s3://"):]
    first, t1 = session(tmp_path, bucket, opts["endpoint_url"])
    assert "resolving dependencies" in first and "hadoop-aws" in first
    assert "spark-packages" not in first and "proxy server" not in first     # Maven Central alone
    second, t2 = session(tmp_path, bucket, opts["endpoint_url"])
    assert "resolving dependencies" not in second and "Ivy" not in second    # the cached jars, no Ivy
    print(f"first session {t1:.1f} s, second {t2:.1f} s")

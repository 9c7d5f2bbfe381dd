"""TABLEFORMAT_S3A=1 (spark_jobs.session): the first session resolves hadoop-aws and the AWS SDK's S3
modules once, from Maven Central alone (no resolver that cannot be reached, so none of Ivy's
warnings), into a cache of its own; every later session puts those jars on the classpath with
no Ivy resolution at all. Each session then reads s3a:// from the loopback S3 server."""
import json
import os
import subprocess
import sys
import time

import pytest

pytest.importorskip("pyspark")

CHILD = """
import json, os, sys
from spark_jobs.session import get_spark, s3a_settings
spark = get_spark("s3a-session", "local[1]", connector=False, conf=json.loads(sys.argv[3]))
bucket, endpoint = sys.argv[1], sys.argv[2]
for k, v in s3a_settings(bucket, {"endpoint_url": endpoint, "key": "testing", "secret": "x"}).items():
    spark.conf.set(k, v)
print("LINES", spark.read.text(f"s3a://{bucket}/hello.txt").count())
"""


def s3a_env(tmp_path) -> dict:
    return {**os.environ, "TABLEFORMAT_S3A": "1", "TABLEFORMAT_CACHE_DIR": str(tmp_path / "cache"),
            "TABLEFORMAT_CONNECTOR": "0"}


def session(tmp_path, bucket, endpoint, conf=None):
    start = time.time()
    p = subprocess.run([sys.executable, "-c", CHILD, bucket, endpoint, json.dumps(conf or {})], env=s3a_env(tmp_path),
                       capture_output=True, text=True, timeout=900)
    assert p.returncode == 0, p.stderr[-4000:]
    assert "LINES 2" in p.stdout, p.stdout[-2000:]
    return p.stderr, time.time() - start


def test_s3a_jars_are_resolved_once_from_maven_central_then_reused(tmp_path, s3_table_root):
    bucket, endpoint = hello(s3_table_root)
    first, t1 = session(tmp_path, bucket, endpoint)
    assert "resolving dependencies" in first and "hadoop-aws" in first
    assert "spark-packages" not in first and "proxy server" not in first     # Maven Central alone
    second, t2 = session(tmp_path, bucket, endpoint)
    assert "resolving dependencies" not in second and "Ivy" not in second    # the cached jars, no Ivy
    print(f"first session {t1:.1f} s, second {t2:.1f} s")


def hello(s3_table_root) -> tuple[str, str]:
    import s3fs
    root, opts = s3_table_root
    fs = s3fs.S3FileSystem(client_kwargs={"endpoint_url": opts["endpoint_url"]}, key=opts["key"], secret=opts["secret"])
    fs.pipe_file(f"{root[len('s3://'):]}/hello.txt", b"a\nb\n")
    return root[len("s3://"):], opts["endpoint_url"]


def cached_jars(tmp_path) -> list[str]:
    code = "from spark_jobs.session import s3a_jars; print(' '.join(s3a_jars()))"
    return subprocess.run([sys.executable, "-c", code], env=s3a_env(tmp_path), capture_output=True, text=True,
                          check=True).stdout.split()


def test_a_first_session_with_packages_of_its_own_leaves_the_s3a_cache_to_a_later_one(tmp_path, s3_table_root):
    """conf's spark.jars.packages add to the s3a packages (that session reads s3a:// too) and go to
    the caller's Ivy: the s3a cache records nothing of them, and the next plain session resolves
    the s3a jars themselves."""
    bucket, endpoint = hello(s3_table_root)
    session(tmp_path, bucket, endpoint, {"spark.jars.packages": "commons-cli:commons-cli:1.5.0"})
    assert cached_jars(tmp_path) == []
    session(tmp_path, bucket, endpoint)
    jars = cached_jars(tmp_path)
    assert any("hadoop-aws-" in j for j in jars) and not any("commons-cli" in j for j in jars), jars


def test_a_recorded_list_without_hadoop_aws_is_not_trusted(tmp_path):
    """A `resolved` list that lacks hadoop-aws (left by an older version) makes the next session resolve."""
    code = ("from spark_jobs.session import s3a_cache, s3a_jars; d = s3a_cache(); (d / 'jars').mkdir(parents=True); "
            "(d / 'jars' / 'commons-cli-1.5.0.jar').write_bytes(b'PK'); "
            "(d / 'resolved').write_text('commons-cli-1.5.0.jar\\n'); print(s3a_jars())")
    out = subprocess.run([sys.executable, "-c", code], env=s3a_env(tmp_path), capture_output=True, text=True)
    assert out.returncode == 0 and out.stdout.strip() == "[]", out.stdout + out.stderr[-2000:]


RACE = """
from spark_jobs.session import mark_s3a_resolved, s3a_cache, s3a_ivy_conf
d = s3a_cache()
for _ in range(300):
    settings = s3a_ivy_conf()
    assert open(settings["spark.jars.ivySettings"]).read().startswith("<ivysettings>")
    mark_s3a_resolved()
"""


def test_concurrent_first_sessions_record_the_cache_without_a_race(tmp_path):
    """Two first sessions at once (two processes) write `resolved` and ivysettings.xml through a
    temporary file of their own: neither fails, and a reader never sees a partial file."""
    code = ("from spark_jobs.session import s3a_cache; d = s3a_cache(); (d / 'jars').mkdir(parents=True); "
            "(d / 'jars' / 'hadoop-aws-3.5.0.jar').write_bytes(b'PK')")
    subprocess.run([sys.executable, "-c", code], env=s3a_env(tmp_path), check=True)
    procs = [subprocess.Popen([sys.executable, "-c", RACE], env=s3a_env(tmp_path), stderr=subprocess.PIPE, text=True)
             for _ in range(4)]
    errors = [p.communicate(timeout=300)[1] for p in procs]
    assert all(p.returncode == 0 for p in procs), [e[-1500:] for e in errors]
    assert [os.path.basename(j) for j in cached_jars(tmp_path)] == ["hadoop-aws-3.5.0.jar"]

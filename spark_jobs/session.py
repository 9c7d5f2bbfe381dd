"""The SparkSession for tableformat jobs: local[2] by default, the data source registered, and
the JVM connector's jar on the classpath when a JDK can build it.

Jars and Maven packages are composable lists: `extra_jars()` / `extra_packages()` gather what
each feature needs (the connector's jar; hadoop-aws for s3a; delta-spark for Delta), joined
once into `spark.jars` / `spark.jars.packages` (both must be set before the JVM starts)."""
from __future__ import annotations

import logging
import os
import sys
from typing import Iterable

from .datasource import register

log = logging.getLogger(__name__)


def extra_jars() -> list[str]:
    """Jars every tableformat session loads: the connector's, when it can be built here."""
    from .connector import jar_or_reason
    jar, why = jar_or_reason()
    if jar is None:
        log.warning("tableformat JVM connector unavailable, Spark reads use the slower paths: %s", why)
        return []
    return [jar]


def extra_packages() -> list[str]:
    """Maven coordinates every tableformat session loads: hadoop-aws when TABLEFORMAT_S3A=1
    (a first download of about 600 MB: the AWS SDK bundle)."""
    return s3a_packages() if os.environ.get("TABLEFORMAT_S3A") == "1" else []


def hadoop_version() -> str:
    """The Hadoop client version the installed pyspark bundles (its hadoop-client-api jar)."""
    from pathlib import Path

    import pyspark
    jars = sorted((Path(pyspark.__file__).parent / "jars").glob("hadoop-client-api-*.jar"))
    if not jars:
        raise RuntimeError("pyspark's jars hold no hadoop-client-api jar")
    return jars[0].name[len("hadoop-client-api-"):-len(".jar")]


def s3a_packages() -> list[str]:
    """hadoop-aws at exactly pyspark's Hadoop version; Maven brings the AWS SDK bundle it declares."""
    return [f"org.apache.hadoop:hadoop-aws:{hadoop_version()}"]


def s3a_settings(bucket: str, storage_options: dict | None) -> dict[str, str]:
    """fsspec/s3fs storage options as Hadoop s3a settings for one bucket."""
    o = dict(storage_options or {})
    client = dict(o.get("client_kwargs") or {})
    pre = f"fs.s3a.bucket.{bucket}."
    out: dict[str, str] = {}
    endpoint = o.get("endpoint_url") or client.get("endpoint_url")
    if endpoint:
        out[pre + "endpoint"] = endpoint
        out[pre + "path.style.access"] = "true"
        out[pre + "connection.ssl.enabled"] = str(endpoint.startswith("https")).lower()
    key = o.get("key") or o.get("aws_access_key_id") or client.get("aws_access_key_id")
    secret = o.get("secret") or o.get("aws_secret_access_key") or client.get("aws_secret_access_key")
    token = o.get("token") or client.get("aws_session_token")
    if key and secret:
        out[pre + "access.key"] = key
        out[pre + "secret.key"] = secret
        out[pre + "aws.credentials.provider"] = (
            "org.apache.hadoop.fs.s3a.TemporaryAWSCredentialsProvider" if token
            else "org.apache.hadoop.fs.s3a.SimpleAWSCredentialsProvider")
        if token:
            out[pre + "session.token"] = token
    elif o.get("anon"):
        out[pre + "aws.credentials.provider"] = "org.apache.hadoop.fs.s3a.AnonymousAWSCredentialsProvider"
    region = o.get("region") or client.get("region_name")
    if region or endpoint:
        out[pre + "endpoint.region"] = region or "us-east-1"
    style = (o.get("config_kwargs") or {}).get("s3", {}).get("addressing_style")
    if style:
        out[pre + "path.style.access"] = str(style == "path").lower()
    return out


def get_spark(app: str = "tableformat", master: str | None = None, jars: Iterable[str] = (),
              packages: Iterable[str] = (), connector: bool = True, conf: dict | None = None):
    """A SparkSession with the data source registered, Python filter pushdown on, and (with
    `connector`; TABLEFORMAT_CONNECTOR=0 turns it off) the JVM connector's jar. `jars` /
    `packages` add to the composed lists."""
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    from pyspark.sql import SparkSession
    b = SparkSession.builder.appName(app)
    if master or not os.environ.get("SPARK_MASTER_URL_SET"):
        b = b.master(master or os.environ.get("TABLEFORMAT_SPARK_MASTER", "local[2]"))
    connector = connector and os.environ.get("TABLEFORMAT_CONNECTOR", "1") != "0"
    all_jars = list(dict.fromkeys([*(extra_jars() if connector else []), *jars]))
    all_packages = list(dict.fromkeys([*extra_packages(), *packages]))
    if all_jars:
        b = b.config("spark.jars", ",".join(all_jars))
    if all_packages:
        b = b.config("spark.jars.packages", ",".join(all_packages))
    for k, v in (conf or {}).items():
        b = b.config(k, v)
    spark = (b.config("spark.sql.python.filterPushdown.enabled", "true")
             .config("spark.sql.shuffle.partitions", os.environ.get("TABLEFORMAT_SHUFFLE_PARTITIONS", "8"))
             .config("spark.ui.enabled", "false")
             .config("spark.ui.showConsoleProgress", "false")
             .config("spark.sql.execution.arrow.pyspark.enabled", "true")
             .getOrCreate())
    register(spark)
    return spark

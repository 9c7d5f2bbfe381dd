"""The SparkSession for tableformat jobs: local[2] by default, the data source registered, and
the JVM connector's jar on the classpath when a JDK can build it.

Jars and Maven packages are composable lists: `extra_jars()` / `extra_packages()` gather what
each feature needs (the connector's jar; hadoop-aws for s3a; delta-spark for Delta), joined
once into `spark.jars` / `spark.jars.packages` (both must be set before the JVM starts: a
session that already exists keeps its jars)."""
from __future__ import annotations

import logging
import os
import sys
import warnings
from pathlib import Path
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
    """Maven coordinates every tableformat session loads: hadoop-aws and the AWS SDK's S3 client
    when TABLEFORMAT_S3A=1 and they were never resolved here (a first download of about 13 MB;
    later sessions take the jars from `s3a_cache()`, with no Ivy resolution)."""
    return s3a_packages() if os.environ.get("TABLEFORMAT_S3A") == "1" and not s3a_jars() else []


def hadoop_version() -> str:
    """The Hadoop client version the installed pyspark bundles (its hadoop-client-api jar)."""
    import pyspark
    jars = sorted((Path(pyspark.__file__).parent / "jars").glob("hadoop-client-api-*.jar"))
    if not jars:
        raise RuntimeError("pyspark's jars hold no hadoop-client-api jar")
    return jars[0].name[len("hadoop-client-api-"):-len(".jar")]


# The AWS SDK v2 version each Hadoop release builds hadoop-aws against (hadoop-project's pom,
# `aws-java-sdk-v2.version`). hadoop-aws declares the SDK's 600 MB shaded `bundle`; the S3
# client's own modules are the same classes in about 13 MB, so the bundle is excluded and they
# are asked for at exactly this version.
AWS_SDK_FOR_HADOOP = {"3.4.0": "2.23.19", "3.4.1": "2.24.6", "3.4.2": "2.29.52", "3.5.0": "2.35.4"}
# What the S3 client's modules bring that pyspark already bundles (Spark's netty serves the
# SDK's async client), or that hadoop-aws only needs with the bundle.
S3A_EXCLUDES = ("software.amazon.awssdk:bundle", "io.netty:*", "org.slf4j:slf4j-api",
                "commons-logging:commons-logging", "commons-codec:commons-codec",
                "org.apache.httpcomponents:httpclient", "org.apache.httpcomponents:httpcore")


def s3a_packages() -> list[str]:
    """hadoop-aws at exactly pyspark's Hadoop version, and the AWS SDK's S3 client it was built
    against (see AWS_SDK_FOR_HADOOP); `S3A_EXCLUDES` go with them into spark.jars.excludes."""
    hadoop = hadoop_version()
    sdk = AWS_SDK_FOR_HADOOP.get(hadoop)
    if sdk is None:
        return [f"org.apache.hadoop:hadoop-aws:{hadoop}"]      # unknown Hadoop: the bundle it declares
    return [f"org.apache.hadoop:hadoop-aws:{hadoop}", f"software.amazon.awssdk:s3:{sdk}",
            f"software.amazon.awssdk:s3-transfer-manager:{sdk}", f"software.amazon.awssdk:sts:{sdk}"]


# Maven Central alone: Spark's default resolver chain also asks repos.spark-packages.org, which
# serves none of these and, where it cannot be reached, prints a warning per parent POM.
IVY_SETTINGS = """<ivysettings>
  <settings defaultResolver="central"/>
  <resolvers><ibiblio name="central" m2compatible="true" root="https://repo1.maven.org/maven2/"/></resolvers>
</ivysettings>
"""


def s3a_cache() -> Path:
    """Where the s3a jars are resolved once (Ivy's cache and retrieved jars), named by the
    packages asked for: another Hadoop version resolves again."""
    import hashlib

    from .connector import cache_dir
    key = hashlib.sha256(",".join(s3a_packages() + list(S3A_EXCLUDES)).encode()).hexdigest()[:16]
    return cache_dir().parent / "s3a" / key


def s3a_jars() -> list[str]:
    """The s3a jars resolved by an earlier session (`s3a_ivy_conf`), or [] before the first, or
    when a jar is missing or hadoop-aws is not among them (then the next session resolves again)."""
    d = s3a_cache()
    if not (d / "resolved").exists():
        return []
    jars = [d / "jars" / n for n in (d / "resolved").read_text().split()]
    if not any("hadoop-aws-" in j.name for j in jars) or not all(j.exists() for j in jars):
        return []
    return [str(j) for j in jars]


def _write_atomically(path: Path, text: str) -> None:
    """Another process (a second first session, or a JVM reading ivysettings.xml) sees the old
    file or the new one, never a part: a temporary file of this process's own, then os.replace."""
    tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
    tmp.write_text(text)
    os.replace(tmp, path)


def s3a_ivy_conf() -> dict[str, str]:
    """Settings that make a session's Ivy resolve the s3a packages into `s3a_cache()` from Maven
    Central alone; `mark_s3a_resolved` then records the jars for the sessions that follow."""
    d = s3a_cache()
    d.mkdir(parents=True, exist_ok=True)
    if not (d / "ivysettings.xml").exists() or (d / "ivysettings.xml").read_text() != IVY_SETTINGS:
        _write_atomically(d / "ivysettings.xml", IVY_SETTINGS)
    return {"spark.jars.ivy": str(d), "spark.jars.ivySettings": str(d / "ivysettings.xml")}


def mark_s3a_resolved() -> None:
    """Record the jars the first session's Ivy retrieved (all of `s3a_cache()/jars`: get_spark
    resolves there only when that Ivy resolves the s3a packages alone), if hadoop-aws is among them."""
    d = s3a_cache()
    names = sorted(p.name for p in (d / "jars").glob("*.jar"))
    if any("hadoop-aws-" in n for n in names):
        _write_atomically(d / "resolved", "\n".join(names) + "\n")


# Each s3a setting from the first of these storage options present: s3fs's own names, a nested
# one dotted (client_kwargs.region_name), as the catalog's `storage.<key>` options write them
# (tableformat.catalog.StorageOptions holds the same table).
S3A_OPTIONS = {"endpoint": ("endpoint_url", "client_kwargs.endpoint_url"),
               "key": ("key", "access.key", "aws_access_key_id", "client_kwargs.aws_access_key_id"),
               "secret": ("secret", "aws_secret_access_key", "client_kwargs.aws_secret_access_key"),
               "token": ("token", "client_kwargs.aws_session_token"),
               "anon": ("anon",),
               "region": ("client_kwargs.region_name",),
               "addressing_style": ("config_kwargs.s3.addressing_style",)}


def flat_storage_options(o: dict | None, prefix: str = "") -> dict[str, str]:
    """Storage options as the catalog's `storage.<key>` strings: nested dicts dotted, booleans
    `true`/`false`, and `key` as `access.key`, a name Spark's spark.redaction.regex hides in SET
    and the UI (it hides secret and token, not `key`)."""
    out: dict[str, str] = {}
    for k, v in (o or {}).items():
        if isinstance(v, dict):
            out.update(flat_storage_options(v, f"{prefix}{k}."))
        elif v is not None:
            out["access.key" if prefix + k == "key" else prefix + k] = str(v).lower() if isinstance(v, bool) else str(v)
    return out


def s3a_settings(bucket: str, storage_options: dict | None) -> dict[str, str]:
    """fsspec/s3fs storage options as Hadoop s3a settings for one bucket; `anon` is true for True,
    "true" or "1" (any case), as the catalog reads it."""
    flat = flat_storage_options(storage_options)
    o = {name: next((flat[k] for k in keys if flat.get(k)), None) for name, keys in S3A_OPTIONS.items()}
    pre = f"fs.s3a.bucket.{bucket}."
    out: dict[str, str] = {}
    if o["endpoint"]:
        out[pre + "endpoint"] = o["endpoint"]
        out[pre + "path.style.access"] = "true"
        out[pre + "connection.ssl.enabled"] = str(o["endpoint"].startswith("https")).lower()
    if o["key"] and o["secret"]:
        out[pre + "access.key"] = o["key"]
        out[pre + "secret.key"] = o["secret"]
        out[pre + "aws.credentials.provider"] = (
            "org.apache.hadoop.fs.s3a.TemporaryAWSCredentialsProvider" if o["token"]
            else "org.apache.hadoop.fs.s3a.SimpleAWSCredentialsProvider")
        if o["token"]:
            out[pre + "session.token"] = o["token"]
    elif (o["anon"] or "").strip().lower() in ("true", "1"):
        out[pre + "aws.credentials.provider"] = "org.apache.hadoop.fs.s3a.AnonymousAWSCredentialsProvider"
    if o["region"] or o["endpoint"]:
        out[pre + "endpoint.region"] = o["region"] or "us-east-1"
    if o["addressing_style"]:
        out[pre + "path.style.access"] = str(o["addressing_style"] == "path").lower()
    return out


# delta-spark's Python package (4.4.1 on PyPI) would ask Maven Central for
# io.delta:delta-spark_<spark major.minor>_2.13:4.4.1, which was never published
# there; the Python code of 4.4.0 and 4.4.1 is identical, so the jars are pinned
# to 4.4.0, exactly, for the pyspark 4.2 they were built against.
DELTA_JARS_VERSION = "4.4.0"
# The connector's SQL extension: `df.write.format("tableformat").mode("append")` runs in the JVM
# writer and committer when it can (tableformat.catalog.DataSourceAppend; option writePath).
SESSION_EXTENSIONS = "tableformat.catalog.SessionExtensions"
DELTA_SQL_CONF = {
    "spark.sql.extensions": "io.delta.sql.DeltaSparkSessionExtension",
    "spark.sql.catalog.spark_catalog": "org.apache.spark.sql.delta.catalog.DeltaCatalog",
}
SNAPSHOT_PARTITIONS = "spark.databricks.delta.snapshotPartitions"   # get_spark: one per core
# Transitive dependencies of delta-spark's kernel that pyspark already bundles
# (newer): excluded so Ivy neither downloads them nor puts a second copy on the classpath.
DELTA_EXCLUDES = ("org.apache.hadoop:hadoop-client-api", "org.apache.hadoop:hadoop-client-runtime",
                  "org.apache.parquet:parquet-column", "org.apache.parquet:parquet-common",
                  "org.apache.parquet:parquet-encoding", "org.apache.parquet:parquet-format-structures",
                  "org.apache.parquet:parquet-hadoop", "org.apache.parquet:parquet-jackson",
                  "com.github.luben:zstd-jni", "org.xerial.snappy:snappy-java",
                  "org.apache.logging.log4j:log4j-api", "org.apache.logging.log4j:log4j-core",
                  "org.apache.logging.log4j:log4j-slf4j2-impl", "org.slf4j:slf4j-api",
                  "com.fasterxml.jackson.core:jackson-core", "com.fasterxml.jackson.core:jackson-databind",
                  "com.fasterxml.jackson.core:jackson-annotations", "commons-logging:commons-logging",
                  "org.roaringbitmap:RoaringBitmap", "org.roaringbitmap:shims", "com.google.code.findbugs:jsr305")


def delta_package(spark_version: str | None = None) -> str:
    """The Maven coordinate of delta-spark's jars for the installed pyspark."""
    if spark_version is None:
        import pyspark
        spark_version = pyspark.__version__
    major_minor = ".".join(spark_version.split(".")[:2])
    return f"io.delta:delta-spark_{major_minor}_2.13:{DELTA_JARS_VERSION}"


def delta_available() -> bool:
    """delta-spark's Python package is installed (its jars come from Maven Central at session start)."""
    import importlib.util
    return importlib.util.find_spec("delta") is not None


def get_spark(app: str = "tableformat", master: str | None = None, jars: Iterable[str] = (),
              packages: Iterable[str] = (), connector: bool = True, delta: bool = False,
              conf: dict | None = None, remote: str | None = None):
    """A SparkSession with the data source registered, Python filter pushdown on, and (with
    `connector`; TABLEFORMAT_CONNECTOR=0 turns it off) the JVM connector's jar. `jars` /
    `packages` add to the composed lists; `delta` adds delta-spark's jars, SQL extension and
    catalog; `conf`: extra settings. `remote`: a Spark Connect session instead (README "Spark
    Connect"): "local[2]" starts a Connect server in this process with the jars; with "sc://..."
    the server's own jars and Python are what it was started with."""
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    from pyspark.sql import SparkSession
    b = SparkSession.builder.appName(app)
    if remote:
        b = b.remote(remote)
    elif master or not os.environ.get("SPARK_MASTER_URL_SET"):
        b = b.master(master or os.environ.get("TABLEFORMAT_SPARK_MASTER", "local[2]"))
    settings, resolving_s3a = dict(conf or {}), False
    if not (remote or "").startswith("sc://"):       # static settings: only for a JVM started here
        settings, resolving_s3a = _jvm_settings(connector, jars, packages, delta, settings)
    for k, v in settings.items():
        b = b.config(k, v)
    b = (b.config("spark.sql.python.filterPushdown.enabled", "true")
         .config("spark.sql.shuffle.partitions", os.environ.get("TABLEFORMAT_SHUFFLE_PARTITIONS", "8"))
         .config("spark.sql.execution.arrow.pyspark.enabled", "true"))
    with warnings.catch_warnings():     # a local Connect server took the static settings at start
        warnings.filterwarnings("ignore", message=r"Failed to set spark\.", category=UserWarning)
        spark = b.getOrCreate()
    if resolving_s3a:
        mark_s3a_resolved()
    if delta and not remote and SNAPSHOT_PARTITIONS not in (conf or {}):
        # Delta rebuilds a snapshot's state (each time travel, MERGE, VACUUM) in 50 partitions by
        # default, sized for clusters and long logs: one per core reads our logs 5-10x faster here
        spark.conf.set(SNAPSHOT_PARTITIONS, str(spark.sparkContext.defaultParallelism))
    register(spark)
    return spark


def _jvm_settings(connector: bool, jars: Iterable[str], packages: Iterable[str], delta: bool,
                  conf: dict) -> tuple[dict[str, str], bool]:
    """`conf` with the settings a JVM must start with: `spark.jars` (the connector's, the cached s3a
    jars and `jars`), `spark.jars.packages`, `spark.jars.excludes`, Delta's SQL extension and catalog,
    no UI; and whether this start resolves the s3a jars into their cache."""
    connector = connector and os.environ.get("TABLEFORMAT_CONNECTOR", "1") != "0"
    s3a = os.environ.get("TABLEFORMAT_S3A") == "1"
    packages = list(packages)
    connector_jars = extra_jars() if connector else []
    all_jars = list(dict.fromkeys([*connector_jars, *(s3a_jars() if s3a else []), *jars]))
    all_packages = list(dict.fromkeys([*extra_packages(), *packages]))
    conf = dict(conf)
    # conf's packages add to the composed list (they used to replace it, s3a's packages too)
    all_packages += [p for p in conf.pop("spark.jars.packages", "").split(",") if p]
    resolving_s3a = s3a and not s3a_jars() and all_packages == s3a_packages() and not (
        delta or "spark.jars.excludes" in conf or "spark.jars.ivySettings" in conf)
    if resolving_s3a:
        conf.update(s3a_ivy_conf())
    excludes = [e for e in conf.get("spark.jars.excludes", "").split(",") if e]
    out: dict[str, str] = {}
    if all_jars:
        out["spark.jars"] = ",".join(all_jars)
    if all_packages or delta:
        out["spark.jars.packages"] = ",".join(dict.fromkeys(
            [*all_packages, *([delta_package()] if delta else [])]))
    out.update(conf)
    if delta:
        out.update(DELTA_SQL_CONF)
        excludes += DELTA_EXCLUDES
    if connector_jars:      # the data source's append through the JVM writer (tableformat.catalog.DataSourceAppend)
        out["spark.sql.extensions"] = ",".join(dict.fromkeys(
            [e for e in out.get("spark.sql.extensions", "").split(",") if e] + [SESSION_EXTENSIONS]))
    if any(p.startswith("software.amazon.awssdk:s3:") for p in all_packages):
        excludes += S3A_EXCLUDES      # the S3 modules stand in for the bundle; hadoop-aws alone needs it
    if excludes:
        out["spark.jars.excludes"] = ",".join(dict.fromkeys(excludes))
    return {**out, "spark.ui.enabled": "false", "spark.ui.showConsoleProgress": "false"}, resolving_s3a


def has_delta(spark) -> bool:
    """The session was started with Delta's SQL extension (so `format("delta")` and DeltaTable work)."""
    return "DeltaSparkSessionExtension" in (spark.conf.get("spark.sql.extensions", "") or "")

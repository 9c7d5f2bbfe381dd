"""The connector's Maven build (spark_jobs/connector/pom.xml) names the Spark, Scala and Hadoop that CI
tests: its `provided` Spark is the one of CI's second environment (the `delta` extra's newest pyspark,
since Maven Central serves no Spark 4.3.0), its Hadoop and Scala those the installed pyspark bundles.
A pyspark or pin upgraded without the pom fails here."""
import re
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

pyspark = pytest.importorskip("pyspark")

ROOT = Path(__file__).resolve().parents[2]
NS = {"m": "http://maven.apache.org/POM/4.0.0"}


def pom_properties() -> dict[str, str]:
    props = ET.parse(ROOT / "spark_jobs" / "connector" / "pom.xml").getroot().find("m:properties", NS)
    return {p.tag.split("}", 1)[1]: p.text for p in props}


def bundled(prefix: str) -> str:
    jars = Path(pyspark.__file__).parent / "jars"
    (jar,) = [j.name for j in jars.glob(f"{prefix}-[0-9]*.jar")]
    return jar[len(prefix) + 1:-len(".jar")]


def test_the_pom_hadoop_and_scala_are_the_installed_pysparks():
    props = pom_properties()
    assert props["hadoop.version"] == bundled("hadoop-client-api")
    assert props["scala.binary.version"] == ".".join(bundled("scala-library").split(".")[:2])
    assert Path(pyspark.__file__).parent.joinpath("jars", f"spark-sql_{props['scala.binary.version']}-"
                                                  f"{pyspark.__version__}.jar").exists()


def test_the_pom_spark_is_the_one_ci_tests_beside_delta():
    """CI's second environment (.ci/run) installs the `delta` extra: its pyspark pin's upper bound is
    the Spark the pom compiles and tests against; the installed (newer or equal) pyspark shares its major."""
    pin = re.search(r'"pyspark>=[0-9.]+,<=([0-9.]+)"', (ROOT / "pyproject.toml").read_text()).group(1)
    spark = pom_properties()["spark.version"]
    assert spark == pin
    assert spark.split(".")[0] == pyspark.__version__.split(".")[0]
    assert tuple(map(int, spark.split("."))) <= tuple(map(int, pyspark.__version__.split(".")[:3]))

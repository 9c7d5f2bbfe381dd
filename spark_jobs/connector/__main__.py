"""`python -m spark_jobs.connector`: build (if needed) and print the connector jar's path,
e.g. `spark-submit --jars $(python -m spark_jobs.connector) job.py`."""
import sys

from . import ConnectorUnavailable, build_jar

try:
    print(build_jar())
except ConnectorUnavailable as e:
    print(f"tableformat connector unavailable: {e}", file=sys.stderr)
    sys.exit(1)

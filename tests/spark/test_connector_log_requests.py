"""The JVM's log reader on S3 (specs/format.md §8.3): a query opens the table from ONE listing of
`_log/`, reads the newest checkpoint and the commits after it, each by one GET from its listed
status (no HEAD before it, no probe for the commit after the head), and a scan reuses what the
query read. A later query of the same JVM (issue #47: warm) lists once more and reads only the
commits that are new (`tableformat.log.LogCache`). Counted by the loopback S3 server's own request
log, on a table with a few commits and after 40 more (checkpoints among them): the same small
number of requests on the log for both.
"""
import json
import os
import re
import subprocess
import sys
import textwrap

import pytest

from helpers import ROOT, TESTS, start_moto

pytest.importorskip("pyspark")

JOB = textwrap.dedent('''
    import json, sys
    sys.path.insert(0, {tests!r})
    import tableformat as tf
    from helpers import range_keyed
    from spark_jobs.session import get_spark, s3a_packages
    from spark_jobs.jvm_paths import configure_s3a

    args = json.loads(sys.argv[1])
    opts, uri = args["storage_options"], args["uri"]
    s3a = "s3a" + uri[2:]
    spark = get_spark("log-requests", "local[1]", packages=s3a_packages(),
                      conf={{"spark.sql.catalog.tf": "tableformat.catalog.TableFormatCatalog"}})
    spark.sparkContext.setLogLevel("ERROR")
    t = range_keyed(uri, ranges=2, width=50, storage_options=opts)
    configure_s3a(spark, t.storage, opts)
    queries = {{                                       # the JVM alone: no Python open of the log
        "load": lambda: spark.read.format("tableformat-jvm").load(s3a).selectExpr("sum(k)").collect(),
        "sql": lambda: spark.sql(f"SELECT sum(k) FROM tf.`{{s3a}}`").collect(),
        "sql_version_as_of_1": lambda: spark.sql(f"SELECT sum(k) FROM tf.`{{s3a}}` VERSION AS OF 1").collect(),
    }}

    import s3fs
    marks = s3fs.S3FileSystem(client_kwargs={{"endpoint_url": opts["endpoint_url"]}}, key=opts["key"],
                              secret=opts["secret"])

    def mark(text):                                    # a request the server's log shows between queries
        time.sleep(0.3)
        marks.invalidate_cache()
        marks.exists(f"logrequests/mark-{{text}}")

    for phase, tags in (("2", 0), ("42", 40)):        # commits in the log
        for i in range(tags):
            t.tag(f"x{{i}}")
        for name, q in queries.items():
            q()                                        # warm: classes, the s3a client, credentials, the log
            mark(f"begin-{{name}}-{{phase}}")
            q()                                        # no new commit
            mark(f"end-{{name}}-{{phase}}")
            t.tag(f"{{name}}{{phase}}")                # one new commit
            mark(f"begin-{{name}}-{{phase}}-new")
            q()
            mark(f"end-{{name}}-{{phase}}-new")
    print(json.dumps(list(queries)))
    spark.stop()
''').replace("import json, sys", "import json, sys, time")


@pytest.fixture
def logged_s3(tmp_path):
    """A loopback S3 server of this test's own, its request log in a file."""
    log = tmp_path / "requests.log"
    with open(log, "w") as err:
        proc, url = start_moto(stderr=err)
    s3fs = pytest.importorskip("s3fs")
    s3fs.S3FileSystem(client_kwargs={"endpoint_url": url}, key="testing", secret="testing").mkdir("logrequests")
    yield "s3://logrequests", {"endpoint_url": url, "key": "testing", "secret": "testing"}, log
    proc.terminate()
    proc.wait(10)


REQUEST = re.compile(r'"(?:\x1b\[[0-9;]*m)*(GET|HEAD|PUT|POST|DELETE) (\S+) HTTP/[0-9.]+(?:\x1b\[0m)?" (\d+)')


def log_requests(lines: list[str], table: str) -> list[tuple[str, str, int]]:
    """(method, path, status) of the requests on the table's `_log/`: its files and its listings."""
    out = []
    for line in lines:
        m = REQUEST.search(line)
        if m and (f"/{table}/_log" in m.group(2) or f"prefix={table}/_log" in m.group(2)):
            out.append((m.group(1), m.group(2), int(m.group(3))))
    return out


def between_marks(lines: list[str]) -> dict[str, list[tuple[str, str, int]]]:
    """The log requests of each measured query: those between its begin and end marks."""
    out, name, window = {}, None, []
    for line in lines:
        m = re.search(r"/logrequests/mark-(begin|end)-(\S+) HTTP", line)
        if m and m.group(1) == "begin":
            name, window = m.group(2), []
        elif m:
            out[name] = log_requests(window, "m")
            name = None
        elif name is not None:
            window.append(line)
    return out


def test_a_query_reads_the_log_from_one_listing_whatever_its_length(tmp_path, logged_s3):
    from spark_jobs.session import s3a_packages  # noqa: F401  (the job's session needs hadoop-aws)
    root, opts, log = logged_s3
    script = tmp_path / "job.py"
    script.write_text(JOB.format(tests=str(TESTS)))
    args = {"uri": root + "/m", "storage_options": opts}
    p = subprocess.run([sys.executable, str(script), json.dumps(args)], capture_output=True, text=True,
                       timeout=1200, env=dict(os.environ, PYTHONPATH=str(ROOT)), cwd=str(tmp_path))
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-6000:]
    got = between_marks(log.read_text().splitlines())
    assert len(got) == 12, got
    for query, reqs in got.items():
        lists = [r for r in reqs if "list-type=2" in r[1]]
        gets = [r for r in reqs if r[0] == "GET" and "list-type=2" not in r[1]]
        assert not [r for r in reqs if r[0] == "HEAD"], (query, reqs)       # opened from the listing
        assert not [r for r in reqs if r[2] == 404], (query, reqs)          # no probe past the head
        assert not [r for r in gets if "_last_checkpoint" in r[1]], (query, reqs)
        # warm (issue #47): the JVM keeps what earlier queries read of the log (LogCache), so a query
        # with no new commit reads no log file, and one after a commit reads that commit alone, at
        # the latest as with VERSION AS OF (whose resolution reads the latest state)
        assert len(gets) == (1 if query.endswith("-new") else 0), (query, reqs)
        assert not gets or gets[0][1].endswith(".json") and ".checkpoint." not in gets[0][1], (query, reqs)
        # one listing to open; an unpinned scan lists again (a kept DataFrame sees later commits)
        assert len(lists) == (1 if "version_as_of" in query else 2), (query, reqs)

"""The restore, tag, untag, tags and lookup commands, run as real processes and judged by the library."""
import json

import pyarrow as pa


from helpers import kv, one_line_error, run, run_many


def test_tag_tags_untag_and_as_of_a_tag(tmp_path):
    t = kv(tmp_path / "t")
    t.insert(pa.table({"key": ["a", "b"], "val": [1, 2]}))
    run("tag", t.uri, "before")
    t.update(pa.table({"key": ["a"], "val": [10]}))
    run("tag", t.uri, "old", "--as-of", "1")
    assert t.tags() == {"before": 1, "old": 1}
    listed = json.loads(run("tags", t.uri, "--json").stdout)
    assert [(x["name"], x["version"]) for x in listed] == [("before", 1), ("old", 1)]
    assert "before" in run("tags", t.uri).stdout
    out = run("scan", t.uri, "--as-of", "before", "--format", "json").stdout
    assert sorted(json.loads(line)["val"] for line in out.splitlines()) == [1, 2]
    run("untag", t.uri, "old")
    assert t.tags() == {"before": 1}
    errs = run_many((("tag", t.uri, "before"), 1), (("untag", t.uri, "nope"), 1), (("tag", t.uri, "9x"), 1),
                    (("scan", t.uri, "--as-of", "tag:nope"), 1), (("scan", t.uri, "--as-of", "nope"), 1))
    for r, cls in zip(errs, ["TagExistsError", "TagNotFoundError", "InvalidTagNameError", "TagNotFoundError",
                             "TagNotFoundError"]):             # a bare name naming no tag: one class (§9.5)
        one_line_error(r, cls)
    assert t.tags() == {"before": 1}


def test_restore_command(tmp_path):
    t = kv(tmp_path / "t")
    t.insert(pa.table({"key": ["a", "b"], "val": [1, 2]}))
    t.tag("good")
    t.update(pa.table({"key": ["a"], "val": [10]}))
    t.delete(pa.table({"key": ["b"]}))
    r = run("restore", t.uri, "--as-of", "good")
    assert "inserted=1 updated=1 deleted=0" in r.stdout
    assert sorted(t.scan().to_arrow().column("val").to_pylist()) == [1, 2]
    assert "nothing to do" in run("restore", t.uri, "--as-of", str(t.version)).stdout
    with t.alter() as a:
        a.add_column("x", "int64", nullable=True)
    v = t.version
    one_line_error(run("restore", t.uri, "--as-of", "good", code=1), "RestoreError")
    assert t.version == v
    run("restore", t.uri, code=2)                                        # --as-of is required


def test_lookup_command(tmp_path):
    t = kv(tmp_path / "t")
    t.insert(pa.table({"key": ["a", "b", "c"], "val": [1, 2, 3]}))
    out = run("lookup", t.uri, "--key", "key=c", "--key", "key=zz", "--key", "key=a", "--format", "json").stdout
    assert [json.loads(line)["val"] for line in out.splitlines()] == [3, 1]
    out = run("lookup", t.uri, "--key", "key=zz", "--missing", "--columns", "val", "--format", "json").stdout
    assert json.loads(out) == {"val": None, "_found": False}
    one_line_error(run("lookup", t.uri, "--key", "val=1", code=1), "InvalidOptionError")


def test_tag_reads_nothing_after_its_commit(tmp_path, monkeypatch, capsys):
    """As with a data command's rejected rows: a read after the commit that fails would exit 1
    with the tag committed."""
    import tableformat as tf
    from tableformat.cli.run import main
    t = tf.create_table(str(tmp_path / "t"), tf.Schema([tf.Column("k", "int64")], primary_key=["k"]))
    t.insert(pa.table({"k": [1]}))
    real_tag = tf.Table.tag

    def tag_then_lose_the_log(self, name, as_of=None):
        r = real_tag(self, name, as_of)
        monkeypatch.setattr(tf.Table, "refresh", lambda self: (_ for _ in ()).throw(OSError("log unreachable")))
        return r
    monkeypatch.setattr(tf.Table, "tag", tag_then_lose_the_log)
    assert main(["tag", t.uri, "v1"]) == 0
    assert "tagged version 1 of table 't' as 'v1' (version 2)" in capsys.readouterr().out
    monkeypatch.undo()
    assert t.tags() == {"v1": 1}

"""Integrity: every byte that decides an answer is covered by a checksum.

Commits and checkpoints carry a CRC-32 over every field but the checksum itself (format
version 3); every data, index, bloom and delta file has the CRC-32 of all its bytes in the
log. A mismatch is a CorruptFileError naming the file, and check() reports each kind: a base file
swapped for another valid one, a log relabelled to an older format.
See specs/format.md §8.1-§8.3.
"""
import json
import zlib

import pyarrow as pa
import pytest

import tableformat as tf
from tableformat.format.metadata import WRITE_FORMAT_FLOOR
from tableformat.format.diskrowset import FILE_CACHE
from tableformat.log.txlog import TransactionLog, checkpoint_path, commit_path
import glob
import os
import shutil
from tableformat.log.txlog import canonical_json


def kv(root, **props):
    schema = tf.Schema([tf.Column("key", "string"), tf.Column("val", "int64", nullable=True)], primary_key="key")
    return tf.create_table(str(root), schema, properties=props or None)


def rows(keys, val=0):
    return pa.table({"key": [f"k{i:05d}" for i in keys], "val": [val + i for i in keys]})


def reopen(root):
    FILE_CACHE.clear()          # read what is on disk now, not what this process cached
    return tf.open_table(str(root))


def flip(path, pos):
    raw = bytearray(path.read_bytes())
    raw[pos] ^= 0x01
    path.write_bytes(bytes(raw))


def violations(t, word):
    rep = t.check()
    return [v for v in rep.violations if word in v]


# --- commits -------------------------------------------------------------------------------

def _edit_commit(root, version, change):
    p = root / commit_path(version)
    d = json.loads(p.read_text())
    change(d)
    p.write_text(json.dumps(d, separators=(",", ":")))


def test_commit_timestamp_with_one_digit_changed_is_refused_and_reported(tmp_path):
    root = tmp_path / "t"
    t = kv(root)
    for i in range(3):
        t.insert(rows([i]))
    ts = t.history()[2].timestamp
    p = root / commit_path(2)
    text = p.read_text()
    assert text.count(str(ts)) == 1
    last = str(ts)[-1]
    p.write_text(text.replace(str(ts), str(ts)[:-1] + ("1" if last == "0" else "0")))
    with pytest.raises(tf.CorruptFileError, match=commit_path(2).split("/")[-1]):
        reopen(root)
    with pytest.raises(tf.CorruptFileError, match="00000000000000000002.json fails its checksum"):
        TransactionLog(t.storage).load(2)                 # what as_of=2 or as_of=ts replays
    bad = violations(t, "00000000000000000002.json")
    assert bad and "checksum" in bad[0]


@pytest.mark.parametrize("field,value", [
    ("operation", "DELETE"), ("read_version", 0), ("txn_id", "0" * 32), ("counts", {"inserted": 7}),
    ("data_change", False), ("version", 1), ("an_unknown_field", 1),
])
def test_every_commit_field_is_covered(tmp_path, field, value):
    root = tmp_path / "t"
    t = kv(root)
    t.insert(rows([1]))
    t.insert(rows([2]))
    _edit_commit(root, 2, lambda d: d.update({field: value}))
    with pytest.raises(tf.CorruptFileError, match="00000000000000000002.json"):
        reopen(root)


def test_a_stripped_commit_checksum_is_not_a_pass(tmp_path):
    """Format 3 makes the checksum mandatory: deleting it does not switch the check off."""
    root = tmp_path / "t"
    t = kv(root)
    t.insert(rows([1]))
    _edit_commit(root, 1, lambda d: d.pop("checksum"))
    with pytest.raises(tf.CorruptFileError, match="00000000000000000001.json has no checksum"):
        reopen(root)
    assert violations(t, "00000000000000000001.json has no checksum")


def test_a_commit_downgraded_to_the_old_rule_is_refused(tmp_path):
    """Relabelling a commit as format 2 (whose checksum covers `actions` only) to hide an edited
    timestamp: writers never go back to an older format, so the reader refuses it."""
    root = tmp_path / "t"
    t = kv(root)
    for i in range(3):
        t.insert(rows([i]))

    def downgrade(d):
        d["format_version"] = 2
        d["timestamp"] += 1
        d["checksum"] = zlib.crc32(json.dumps(d["actions"], sort_keys=True, separators=(",", ":")).encode())
    _edit_commit(root, 2, downgrade)
    with pytest.raises(tf.CorruptFileError, match="00000000000000000002.json says format version 2 after"):
        reopen(root)
    assert violations(t, "00000000000000000002.json says format version 2")


# --- checkpoints -----------------------------------------------------------------------------

def _checkpointed(tmp_path):
    root = tmp_path / "t"
    t = kv(root, checkpoint_interval=5)
    for i in range(7):
        t.insert(rows([i]))
    assert (root / checkpoint_path(5)).exists()
    return root, t, [(h.version, h.timestamp) for h in t.history()]


def test_checkpoint_with_altered_history_falls_back_and_is_reported(tmp_path):
    root, t, history = _checkpointed(tmp_path)
    p = root / checkpoint_path(5)
    d = json.loads(p.read_text())
    d["history"][3][1] += 1_000_000          # a wrong timestamp for version 3, checksum untouched
    p.write_text(json.dumps(d))
    t2 = reopen(root)
    assert [(h.version, h.timestamp) for h in t2.history()] == history      # from the commits
    assert t2.scan(as_of=tf.Timestamp(history[3][1])).count() == 3
    assert t2.scan(as_of=tf.Timestamp(history[4][1] - 1)).count() == 3
    assert t2.scan().count() == 7
    bad = violations(t2, "checkpoint")
    assert bad and "00000000000000000005.checkpoint.json" in bad[0] and "checksum" in bad[0]


@pytest.mark.parametrize("damage", ["version", "format_version_downgrade", "no_checksum"])
def test_checkpoint_other_damage_falls_back_and_is_reported(tmp_path, damage):
    root, t, history = _checkpointed(tmp_path)
    p = root / checkpoint_path(5)
    d = json.loads(p.read_text())
    if damage == "version":
        d["version"] = 4
    elif damage == "no_checksum":
        del d["checksum"]
    else:  # relabelled as format 2, whose checksum covers `state` only, to hide a history edit
        d["format_version"] = 2
        d["history"][3][1] += 1
        d["checksum"] = zlib.crc32(json.dumps(d["state"], sort_keys=True, separators=(",", ":")).encode())
    p.write_text(json.dumps(d))
    t2 = reopen(root)
    assert [(h.version, h.timestamp) for h in t2.history()] == history
    assert t2.scan().count() == 7
    assert any("00000000000000000005.checkpoint.json" in v for v in violations(t2, "checkpoint"))


# --- bloom filter and PK index ----------------------------------------------------------------

def test_bloom_with_its_bits_cleared_cannot_let_a_key_in_twice(tmp_path):
    root = tmp_path / "t"
    t = kv(root)
    t.insert(rows(range(100)))
    (rs,) = t.state.rowsets.values()
    p = root / rs.bloom.path
    raw = p.read_bytes()
    p.write_bytes(raw[:28] + bytes(len(raw) - 28))          # same size, same valid header, no bits
    t2 = reopen(root)
    with pytest.raises(tf.CorruptFileError, match=rs.bloom.path):
        t2.insert(rows([5]))
    with pytest.raises(tf.CorruptFileError, match=rs.bloom.path):
        t2.insert_ignore(rows([5]))
    assert t2.version == 1 and t2.scan().count() == 100        # nothing committed
    bad = violations(t2, rs.bloom.path)
    assert bad and bad[0].startswith("bloom filter") and "checksum" in bad[0]


def _pk_index_positions(path):
    """A byte in the footer's block first keys (no page CRC covers it) and one in a data page."""
    raw = path.read_bytes()
    meta = raw.index(b"tableformat.pk_block_first_keys")
    return [meta + len(b"tableformat.pk_block_first_keys") + 12, len(raw) // 3, 5]


@pytest.mark.parametrize("which", [0, 1, 2])
def test_flipped_byte_in_the_pk_index_is_an_error_not_a_wrong_answer(tmp_path, which):
    root = tmp_path / "t"
    t = kv(root, pk_index_block_rows=16)
    t.insert(rows(range(0, 2000, 2)))
    (rs,) = t.state.rowsets.values()
    p = root / rs.pk_index.path
    flip(p, _pk_index_positions(p)[which])
    for op in (lambda x: x.insert(rows([1000])),            # the key exists: bloom says maybe, then index
               lambda x: x.update(rows([1000], val=7)),
               lambda x: x.scan(filter=[("key", "=", "k01000")]).to_arrow()):
        with pytest.raises(tf.CorruptFileError, match=rs.pk_index.path):
            op(reopen(root))
    bad = violations(reopen(root), rs.pk_index.path)
    assert bad and bad[0].startswith("PK index") and "checksum" in bad[0]


# --- base and delta files ----------------------------------------------------------------------

@pytest.mark.parametrize("where", ["page_header", "middle", "footer"])
def test_flipped_byte_in_a_base_file_is_an_error(tmp_path, where):
    root = tmp_path / "t"
    t = kv(root)
    t.insert(rows(range(3000)))
    (rs,) = t.state.rowsets.values()
    p = root / rs.base[0].path
    size = p.stat().st_size
    flip(p, {"page_header": 5, "middle": size // 2, "footer": size - 30}[where])
    with pytest.raises(tf.CorruptFileError, match=rs.base[0].path):
        reopen(root).scan().to_arrow()
    bad = violations(reopen(root), rs.base[0].path)
    assert bad and bad[0].startswith("base file")


@pytest.mark.parametrize("where", ["page_header", "middle", "footer"])
def test_flipped_byte_in_a_delta_file_is_an_error(tmp_path, where):
    root = tmp_path / "t"
    t = kv(root)
    t.insert(rows(range(3000)))
    t.update(rows(range(0, 3000, 3), val=100_000))
    ((d,),) = t.state.deltas.values()
    p = root / d.path
    size = p.stat().st_size
    flip(p, {"page_header": 5, "middle": size // 2, "footer": size - 30}[where])
    with pytest.raises(tf.CorruptFileError, match=d.path):
        reopen(root).scan().to_arrow()
    bad = violations(reopen(root), d.path)
    assert bad and bad[0].startswith("delta file")


def test_every_file_in_the_log_carries_its_crc32(tmp_path):
    root = tmp_path / "t"
    t = kv(root)
    t.insert(rows(range(100)))
    t.update(rows(range(0, 100, 2), val=5))
    t.compact()
    st = t.state
    refs = [f for r in st.rowsets.values() for f in r.files] + [d.ref for ds in st.deltas.values() for d in ds]
    assert refs and len(refs) > 3
    for f in refs:
        assert f.crc32 == zlib.crc32((root / f.path).read_bytes()), f.path
    assert t.check().ok


# --- older formats ----------------------------------------------------------------------------

def _rewrite_as_format_version_2(root):
    """The log as a format-2 writer wrote it: commit checksums over `actions`, checkpoint checksums
    over `state`, no `crc32` in file descriptors."""
    def strip(obj):
        if isinstance(obj, dict):
            obj.pop("crc32", None)
            for v in obj.values():
                strip(v)
        elif isinstance(obj, list):
            for v in obj:
                strip(v)
    for p in (root / "_log").iterdir():
        if p.name.endswith(".checkpoint.json"):
            d = json.loads(p.read_text())
            strip(d["state"])
            d["format_version"] = d["state"]["format_version"] = 2
            d["checksum"] = zlib.crc32(json.dumps(d["state"], sort_keys=True, separators=(",", ":")).encode())
        elif p.name.endswith(".json"):
            d = json.loads(p.read_text())
            strip(d["actions"])
            for a in d["actions"]:
                if "metadata" in a:
                    a["metadata"]["format_version"] = 2
            d["format_version"] = 2
            d["checksum"] = zlib.crc32(json.dumps(d["actions"], sort_keys=True, separators=(",", ":")).encode())
        else:
            continue
        p.write_text(json.dumps(d))


def test_a_format_2_table_still_opens_reads_and_takes_new_commits(tmp_path):
    root = tmp_path / "t"
    t = kv(root, checkpoint_interval=3)
    for i in range(4):
        t.insert(rows(range(i * 10, i * 10 + 10)))
    t.update(rows(range(0, 40, 4), val=1000))
    want = {v: t.scan(as_of=v).to_arrow().sort_by("key") for v in range(t.version + 1)}
    _rewrite_as_format_version_2(root)
    t2 = reopen(root)
    assert t2.state.format_version == 2
    assert all(f.crc32 is None for r in t2.state.rowsets.values() for f in r.files)
    for v, w in want.items():
        assert t2.scan(as_of=v).to_arrow().sort_by("key").equals(w)
    assert t2.check().ok
    with pytest.raises(tf.DuplicateKeyError,
                       match=r"1 key\(s\) already exist in table 't' \(first: 'k00003'\); use insert_ignore or"):
        t2.insert(rows([3]))
    t2.insert(rows([500]))                                   # a format-3 commit after format-2 ones
    t2.update(rows([1], val=-1))
    assert json.loads((root / commit_path(t2.version)).read_text())["format_version"] == WRITE_FORMAT_FLOOR
    t3 = reopen(root)
    assert t3.scan().count() == 41 and t3.check().ok
    # the old rule still guards the old commits' actions
    _edit_commit(root, 2, lambda d: d["actions"][0]["add_rowset"].update(num_rows=11))
    with pytest.raises(tf.CorruptFileError, match="00000000000000000002.json fails its checksum"):
        TransactionLog(t3.storage).read_commit(2)


# --- a base file swapped for another valid one ------------------------------------------------

@pytest.fixture
def swapped(tmp_path):
    d = str(tmp_path / "t")
    s = tf.Schema([tf.Column("k", "int64"), tf.Column("v", "int64", nullable=True)], "k")
    t = tf.create_table(d, s)
    t.insert(pa.table({"k": list(range(0, 100)), "v": list(range(100))}))
    t.insert(pa.table({"k": list(range(1000, 1100)), "v": [7] * 100}))
    a, b = [glob.glob(f"{d}/tablets/*/{rs.id}/base-*")[0] for rs in t.state.rowsets.values()]
    assert os.path.getsize(a) != os.path.getsize(b)
    shutil.copy(b, a)
    return tf.open_table(d)


def test_check_reports_it(swapped):
    assert not swapped.check(deep=False).ok                      # passes: check() notices the size


def test_whole_read_refuses(swapped):
    with pytest.raises(tf.CorruptFileError, match=r"base file tablets/.*\.parquet has \d+ bytes, the log recorded \d+"):
        swapped.scan().to_arrow()


def test_projected_scan_refuses(swapped):
    with pytest.raises(tf.CorruptFileError,  # observed: 200 rows, no error
                       match=r"file tablets/.*\.parquet has \d+ bytes, the log recorded \d+: it was replaced"):
        swapped.scan(columns=["v"], filter=("v", "=", 7)).to_arrow()


def test_point_lookup_refuses(swapped):
    with pytest.raises(tf.CorruptFileError,  # observed: [] (row k=5 silently missing)
                       match=r"file tablets/.*\.parquet has \d+ bytes, the log recorded \d+: it was replaced"):
        swapped.scan(filter=("k", "=", 5)).to_arrow()


# --- a log relabelled to an older format ------------------------------------------------------

def test_all_commits_relabelled_to_format_2_are_refused(tmp_path):
    d = str(tmp_path / "t")
    s = tf.Schema([tf.Column("k", "int64"), tf.Column("v", "int64", nullable=True)], "k")
    t = tf.create_table(d, s)
    t.insert(pa.table({"k": [1], "v": [1]}))
    t.insert(pa.table({"k": [2], "v": [2]}))
    for v in range(3):
        p = f"{d}/_log/{v:020d}.json"
        c = json.load(open(p))
        c["format_version"] = 2
        if v == 2:
            c["timestamp"] += 10**12
        c["checksum"] = zlib.crc32(canonical_json(c["actions"]))
        open(p, "w").write(json.dumps(c))
    with pytest.raises(tf.CorruptFileError,
                       match=f"says format version 2 in a table created in format version {WRITE_FORMAT_FLOOR}: the file was altered"):
        t2 = tf.open_table(d)                     # observed: opens; state.format_version == 3
        assert t2.state.format_version == 3
        assert t2.check().ok                      # observed: 0 violations, forged timestamp in history()


def _a_base_file_with_a_bad_page(tmp_path):
    """(table, schema, its one rowset, its base file's path), the base file's last page damaged:
    the high byte of its last value no longer matches the page's CRC."""
    import pyarrow.parquet as pq
    schema = tf.Schema([tf.Column("key", "string"), tf.Column("val", "int64", compression="none")],
                       primary_key="key")
    root = tmp_path / "t"
    t = tf.create_table(str(root), schema)
    t.insert(rows(range(3000)))
    (rs,) = t.state.rowsets.values()
    p = root / rs.base[0].path
    md = pq.ParquetFile(p).metadata
    cc = md.row_group(md.num_row_groups - 1).column(1)
    flip(p, cc.data_page_offset + cc.total_compressed_size - 1)
    return t, schema, rs, p


def test_a_read_checked_whole_against_the_log_skips_the_page_crcs_others_verify_them(tmp_path):
    """§5: bytes checked whole against the log's CRC-32 are decoded without their page CRCs
    checked again (the stronger check covered them); a read of part of a file verifies them.
    Shown with a base file whose page bytes differ from their page CRC while the descriptor's
    CRC-32 matches the file (as a writer that wrote wrong bytes consistently would leave it)."""
    import dataclasses
    from tableformat.format.diskrowset import read_base_columns
    t, schema, rs, p = _a_base_file_with_a_bad_page(tmp_path)
    ref = dataclasses.replace(rs.base[0], crc32=zlib.crc32(p.read_bytes()))
    damaged = dataclasses.replace(rs, base=(ref,))
    cols = [schema.column("key"), schema.column("val")]
    FILE_CACHE.clear()
    whole = read_base_columns(t.storage, damaged, cols)
    assert whole[cols[1].id].to_pylist()[:-1] == list(range(2999))
    with pytest.raises(tf.CorruptFileError, match=rs.base[0].path):
        read_base_columns(t.storage, damaged, cols, 0, 2999)


def test_a_whole_read_of_a_file_with_no_recorded_crc_still_verifies_its_page_crcs(tmp_path):
    """§5, §8.2: page CRCs may be skipped only for bytes checked whole against a recorded CRC-32.
    A descriptor without `crc32` (versions 1, 2; or a skipped-rows file named without one) has
    nothing to check the bytes against, so the page CRCs are the only check and must run."""
    import dataclasses
    from tableformat.format.cfile_set import verified_parquet_file
    t, _, rs, _ = _a_base_file_with_a_bad_page(tmp_path)
    ref = dataclasses.replace(rs.base[0], crc32=None)
    FILE_CACHE.clear()
    with pytest.raises((tf.CorruptFileError, OSError, pa.ArrowException)):
        verified_parquet_file(t.storage, ref, "skipped rows file").read()

"""The files of an Iceberg mirror (specs/format.md §16): our schema and statistics as Iceberg's,
a rowset's base file as a manifest DataFile, its deleted rows as a position-delete file, and
pyiceberg's FileIO over our Storage, so pyiceberg's own Avro writers write the manifests to any
filesystem we reach. `iceberg_mirror` assembles them into snapshots.
"""
from __future__ import annotations

import hashlib
import io
import math
from decimal import Decimal

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from ..format.errors import MirrorError, MissingDependencyError
from ..format.metadata import RowSetMeta, TableState
from ..format.schema import value_from_json
from ..format.storage import Storage

DATA = "data"
POS_PATH_ID, POS_POS_ID = 2147483546, 2147483545    # Iceberg's reserved ids of file_path and pos
STRING_BOUND_BYTES = 64                             # longer string bounds: lower truncated, upper left out


def pyiceberg_manifest():
    """pyiceberg's manifest module, or MissingDependencyError naming the extra."""
    try:
        import pyiceberg.manifest as manifest
    except ImportError as e:
        raise MissingDependencyError("mirror_iceberg writes Iceberg manifests with pyiceberg: "
                                     "pip install 'tableformat[iceberg]'") from e
    return manifest


# --- locations and pyiceberg's FileIO over our Storage ---------------------------------------------
def iceberg_uri(storage: Storage, rel: str) -> str:
    """The absolute location of a file as Iceberg names it: scheme + path, not percent-encoded
    (Iceberg paths are plain strings, unlike Delta's URIs)."""
    p = storage.path(rel).rstrip("/")
    if storage.is_local:
        return "file://" + p
    if storage.is_hdfs:
        import urllib.parse
        return f"hdfs://{urllib.parse.urlsplit(storage.uri).netloc}" + p
    return f"{storage.protocol}://" + p


class _Bytes(io.BytesIO):
    def __init__(self, sink: dict, location: str):
        super().__init__()
        self._sink, self._loc = sink, location

    def close(self) -> None:
        if not self.closed:
            self._sink[self._loc] = self.getvalue()
        super().close()

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def _file_classes(m: Storage, rel):
    """pyiceberg's InputFile and OutputFile over our Storage (outputs collect in a dict)."""
    from pyiceberg.io import InputFile, OutputFile

    class In(InputFile):
        def __init__(self, location: str):
            super().__init__(location)
            self.data: bytes | None = None

        def _bytes(self) -> bytes:
            if self.data is None:
                self.data = m.read(rel(self.location))
            return self.data

        def __len__(self) -> int:
            return len(self._bytes())

        def exists(self) -> bool:
            return m.exists(rel(self.location))

        def open(self, seekable: bool = True):
            return io.BytesIO(self._bytes())

    class Out(OutputFile):
        def __init__(self, location: str, sink: dict):
            super().__init__(location)
            self.sink = sink

        def __len__(self) -> int:
            return len(self.sink[self.location])

        def exists(self) -> bool:
            return self.location in self.sink

        def to_input_file(self):
            return In(self.location)

        def create(self, overwrite: bool = False):
            return _Bytes(self.sink, self.location)
    return In, Out


def storage_io(m: Storage, base: str):
    """pyiceberg's FileIO for the mirror's own files (`base` = the mirror's location), through our
    Storage (local, S3, HDFS alike): reads come from Storage; writes collect in memory and are
    put by `flush`, so nothing is written before the caller decides."""
    from pyiceberg.io import FileIO

    def rel(location: str) -> str:
        if not location.startswith(base + "/"):
            raise MirrorError(f"the Iceberg mirror at {base} names a file outside it: {location}")
        return location[len(base) + 1:]
    In, Out = _file_classes(m, rel)

    class StorageIO(FileIO):
        def __init__(self):
            super().__init__({})
            self.written: dict[str, bytes] = {}

        def new_input(self, location: str):
            return In(location)

        def new_output(self, location: str):
            return Out(location, self.written)

        def delete(self, location) -> None:
            raise MirrorError("the Iceberg mirror never deletes files")

        def flush(self) -> None:
            for loc, data in self.written.items():
                m.write(rel(loc), data)
    return StorageIO()


# --- schema, statistics ------------------------------------------------------------------------
def iceberg_schema(state: TableState, schema_id: int) -> dict:
    """Our schema as Iceberg's: field id = our column ID, the primary key as identifier fields."""
    fields = [{"id": c.id, "name": c.name, "required": not c.nullable, "type": c.type.iceberg_name}
              for c in state.schema.columns]
    return {"type": "struct", "schema-id": schema_id, "fields": fields,
            "identifier-field-ids": [state.schema.column(n).id for n in state.schema.primary_key]}


def pytype(ctype):
    """pyiceberg's type object of a column type, parsed from its Iceberg name."""
    from pyiceberg.types import NestedField
    return NestedField(1, "x", ctype.iceberg_name).field_type


def _bounds(ctype, s: dict) -> tuple[bytes | None, bytes | None]:
    """Iceberg's lower/upper bound of one column of a file, from our statistics (§8.2), written
    only where every value of the file lies within them under every reader's comparison: no
    float bound where a NaN is or may be (Spark ranks NaN highest, Iceberg's spec leaves it out),
    zero widened to -0.0 / +0.0, strings exact up to 64 bytes (a longer minimum is truncated, a
    longer maximum left out), no binary bounds."""
    from pyiceberg.conversions import to_bytes
    lo, hi, k = s.get("min"), s.get("max"), ctype.kind
    if lo is None or hi is None or k == "binary":
        return None, None
    t = pytype(ctype)
    if k in ("float", "double"):
        if s.get("nan", 1):
            return None, None
        lo, hi = float(lo), float(hi)
        if math.isnan(lo) or math.isnan(hi):
            return None, None
        lo, hi = (-0.0 if lo == 0 else lo), (0.0 if hi == 0 else hi)
        return to_bytes(t, lo), to_bytes(t, hi)
    if k in ("string", "varchar"):
        lb, hb = lo.encode(), hi.encode()
        if len(lb) > STRING_BOUND_BYTES:
            lb = lb[:STRING_BOUND_BYTES].decode(errors="ignore").encode()
        return lb, (hb if len(hb) <= STRING_BOUND_BYTES else None)
    if k == "date":
        lo, hi = value_from_json(ctype, lo), value_from_json(ctype, hi)
    elif k == "decimal":
        lo, hi = Decimal(lo), Decimal(hi)
    elif k == "unixtime_micros":
        lo, hi = int(lo), int(hi)
    return to_bytes(t, lo), to_bytes(t, hi)


def data_file(state: TableState, rs: RowSetMeta, uri: str):
    """The manifest's DataFile of a rowset's base file: counts and bounds of the file's rows."""
    mf = pyiceberg_manifest()
    ref = rs.base[0]
    have = set(ref.column_ids)
    counts, nulls, nans, lower, upper = {}, {}, {}, {}, {}
    for c in state.schema.columns:
        if c.id not in have:                  # added later without a read default: all NULL (§11)
            counts[c.id] = nulls[c.id] = rs.num_rows
            continue
        s = rs.stats.get(c.id)
        if s is None:
            continue
        counts[c.id] = rs.num_rows
        if s.get("nulls") is not None:
            nulls[c.id] = int(s["nulls"])
        if c.type.kind in ("float", "double") and s.get("nan") is not None:
            nans[c.id] = int(s["nan"])
        lo, hi = _bounds(c.type, s)
        if lo is not None:
            lower[c.id] = lo
        if hi is not None:
            upper[c.id] = hi
    return mf.DataFile.from_args(
        content=mf.DataFileContent.DATA, file_path=uri, file_format=mf.FileFormat.PARQUET,
        partition=mf.Record(), record_count=rs.num_rows, file_size_in_bytes=ref.size,
        value_counts=counts, null_value_counts=nulls, nan_value_counts=nans,
        lower_bounds=lower, upper_bounds=upper, sort_order_id=None)


def delete_file(m: Storage, base: str, data_uri: str, positions: np.ndarray):
    """The position-delete file of one data file: (file_path, pos) rows sorted by pos, named by a
    digest of its content, so an unchanged set of deleted rows is recognised and never rewritten."""
    mf = pyiceberg_manifest()
    pos = np.sort(positions.astype(np.int64))
    digest = hashlib.sha256(data_uri.encode() + b"\0" + pos.tobytes()).hexdigest()[:40]
    rel = f"{DATA}/deletes-{digest}.parquet"
    schema = pa.schema([pa.field("file_path", pa.string(), False, {b"PARQUET:field_id": str(POS_PATH_ID).encode()}),
                        pa.field("pos", pa.int64(), False, {b"PARQUET:field_id": str(POS_POS_ID).encode()})])
    if m.exists(rel):
        size = m.size(rel)
    else:
        buf = pa.BufferOutputStream()
        pq.write_table(pa.table([pa.array([data_uri] * len(pos), pa.string()), pa.array(pos)], schema=schema), buf,
                       compression="zstd")
        size = m.write(rel, buf.getvalue())
    from pyiceberg.conversions import to_bytes
    from pyiceberg.types import LongType
    return mf.DataFile.from_args(
        content=mf.DataFileContent.POSITION_DELETES, file_path=f"{base}/{rel}", file_format=mf.FileFormat.PARQUET,
        partition=mf.Record(), record_count=len(pos), file_size_in_bytes=size,
        value_counts={POS_PATH_ID: len(pos), POS_POS_ID: len(pos)},
        null_value_counts={POS_PATH_ID: 0, POS_POS_ID: 0},
        lower_bounds={POS_PATH_ID: data_uri.encode(), POS_POS_ID: to_bytes(LongType(), int(pos[0]))},
        upper_bounds={POS_PATH_ID: data_uri.encode(), POS_POS_ID: to_bytes(LongType(), int(pos[-1]))})




def delete_manifest_writer(spec, schema, output_file, snapshot_id: int):
    """pyiceberg's v2 manifest writer, for a delete manifest (its own writes only data manifests):
    content DELETES in the manifest list and `content: deletes` in the Avro file's metadata."""
    mf = pyiceberg_manifest()

    class DeleteManifestWriter(mf.ManifestWriterV2):
        def content(self):
            return mf.ManifestContent.DELETES

        @property
        def _meta(self):
            return {"schema": self._schema.model_dump_json(), "partition-spec": "[]",
                    "partition-spec-id": str(self._spec.spec_id), "format-version": "2",
                    "avro.codec": self._compression, "content": "deletes"}
    return DeleteManifestWriter(spec, schema, output_file, snapshot_id, "deflate")

"""Reading a file of known size over ranged GETs (S3, HDFS): the log records each file's size,
so no HEAD is needed, and column chunk reads are coalesced into as few GETs as pay
(specs/format.md §8.2: the size the store reports is checked against the log's).
"""
from __future__ import annotations

from .errors import CorruptFileError
from .metadata import FileRef
from .storage import Storage


# Files up to this size are fetched whole in one GET: Arrow's first footer read takes the last
# 64 KiB anyway, and a whole small file also gets the log's CRC-32 check.
WHOLE_READ_BYTES = 128 * 1024
# Ranges of column chunks closer than this are fetched as one GET: about what a request's latency
# would transfer (Arrow's CacheOptions.MakeFromNetworkMetrics), so a skipped gap costs less than a GET.
COALESCE_HOLE_BYTES = 1 << 20
COALESCE_MAX_BYTES = 64 << 20


class RangedFile:
    """A read-only file of known size over ranged GETs: no HEAD, and the size the store reports
    with the first range (S3's Content-Range) is checked against the one the log recorded."""

    def __init__(self, storage: Storage, ref: FileRef):
        self.storage, self.ref, self.size, self.pos, self.closed = storage, ref, ref.size, 0, False
        self._buffers: list[tuple[int, bytes]] = []     # prefetched (start, bytes)

    def _get(self, start: int, end: int) -> bytes:
        data, total = self.storage.read_range(self.ref.path, start, end)
        self._check_total(total)
        if len(data) != end - start:
            raise CorruptFileError(f"file {self.ref.path} is shorter than the {self.size} bytes the log recorded")
        return data

    def prefetch(self, ranges: list[tuple[int, int]]) -> None:
        """Fetch byte ranges [start, end) ahead of the reader, coalesced into as few GETs as pay."""
        merged: list[list[int]] = []
        for s, e in sorted((max(0, s), min(self.size, e)) for s, e in ranges if e > s):
            if merged and s - merged[-1][1] <= COALESCE_HOLE_BYTES and e - merged[-1][0] <= COALESCE_MAX_BYTES:
                merged[-1][1] = max(merged[-1][1], e)
            else:
                merged.append([s, e])
        for s, e in merged:
            if not any(bs <= s and e <= bs + len(b) for bs, b in self._buffers):
                self._buffers.append((s, self._get(s, e)))

    def _check_total(self, total: int | None) -> None:
        if total is not None and total != self.size:
            raise CorruptFileError(f"file {self.ref.path} has {total} bytes, the log recorded {self.size}: it was "
                                   "replaced or damaged; restore it from a backup")

    def read(self, n: int = -1) -> bytes:
        end = self.size if n is None or n < 0 else min(self.size, self.pos + n)
        if end <= self.pos:
            return b""
        for bs, b in self._buffers:
            if bs <= self.pos and end <= bs + len(b):
                data = b[self.pos - bs:end - bs]
                break
        else:
            data = self._get(self.pos, end)
        self.pos = end
        return data

    def seek(self, offset: int, whence: int = 0) -> int:
        self.pos = offset if whence == 0 else self.pos + offset if whence == 1 else self.size + offset
        return self.pos

    def tell(self) -> int:
        return self.pos

    def seekable(self) -> bool:
        return True

    def readable(self) -> bool:
        return True

    def writable(self) -> bool:
        return False

    def close(self) -> None:
        self.closed = True

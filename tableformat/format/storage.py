"""All table I/O, through fsspec: local paths, file://, s3://, hdfs:// and any fsspec store.

Data files are written once under unique names and never modified, so the
only write that must be atomic and exclusive is the commit (`put_if_absent`,
specs/format.md §8.1): a hard link of a fully written temporary file on local
disk, a conditional put (If-None-Match) on S3, HDFS's exclusive rename of a
fully written temporary file, an exclusive create elsewhere.

hdfs:// goes through WebHDFS (fsspec's pure-HTTP client), not libhdfs: no
registry here has libhdfs (pyarrow's HadoopFileSystem needs it, and a JVM),
and every NameNode serves WebHDFS (README "HDFS").
"""
from __future__ import annotations

import os
import posixpath
import urllib.parse
import uuid
from typing import Any, Callable

import fsspec
import pyarrow as pa

from .errors import InvalidURIError, MissingDependencyError, PathOverlapError, TableFormatError

_CREDENTIAL_WORDS = ("key", "secret", "token", "password", "credential")
_S3_SCHEMES = ("s3", "s3a", "s3n")     # one store under Hadoop's and fsspec's names


def _redacted(uri: str) -> str:
    """A URI to show: never echo credentials embedded in it (user:secret@host)."""
    if "@" in uri and "://" in uri:
        scheme, rest = uri.split("://", 1)
        return f"{scheme}://***@{rest.split('@', 1)[1]}"
    return uri


def location(uri: str) -> tuple[str, tuple[str, ...]]:
    """Where a URI points, as (store, path components), so that two spellings of one place
    compare equal: a local path or `file:` URI by its real path (symlinks, `..`, `.` and
    trailing slashes resolved); `s3://`, `s3a://` and `s3n://` as one store, by bucket and key;
    any other store by scheme, host and normalised path. A chained URL (`simplecache::s3://..`)
    is its last link."""
    if not isinstance(uri, str) or not uri.strip() or "\x00" in uri:
        raise InvalidURIError(f"a path must be a non-empty string without NUL, got {uri!r}")
    u = uri.strip().rsplit("::", 1)[-1]
    scheme, sep, rest = u.partition("://")
    if not sep and u.lower().startswith("file:"):
        scheme, rest = "file", u[5:]
    elif not sep:
        scheme, rest = "file", u
    scheme = scheme.lower()
    if scheme in ("file", "local"):
        if rest.startswith("//"):                    # file://host/path: the host names this machine
            rest = "/" + rest[2:].partition("/")[2]
        p = os.path.realpath(rest or ".")
        return "file", tuple(x for x in p.split(os.sep) if x)
    if scheme in _S3_SCHEMES:
        scheme = "s3"
    host, slash, tail = rest.partition("/")
    rest = host.rpartition("@")[2] + slash + tail     # user:secret@host names the host
    return scheme, tuple(x for x in posixpath.normpath("/" + rest).split("/") if x)


def overlaps(a: str, b: str) -> bool:
    """Whether two locations are the same directory or one lies inside the other."""
    (sa, pa_), (sb, pb) = location(a), location(b)
    n = min(len(pa_), len(pb))
    return sa == sb and pa_[:n] == pb[:n]


def check_outside_table(path: str, table_uri: str, what: str) -> None:
    """Refuse (PathOverlapError) a user's output path that is the table's directory, inside it or
    an ancestor of it: our vacuum would delete files written inside, a file written there could
    take the name of a log entry, and a foreign tool cleaning its own directory (Delta VACUUM,
    an overwrite) would delete ours. The one rule for every output path (specs/format.md §1)."""
    if overlaps(path, table_uri):
        raise PathOverlapError(f"{what} {_redacted(path)!r} overlaps the table at "
                               f"{_redacted(table_uri)!r} (it is the table's directory, lies inside it, "
                               "or holds it); give a path outside the table's directory")


def _sync_read(fs, body) -> bytes:
    """Read an aiobotocore response body on the filesystem's event loop."""
    from fsspec.asyn import sync
    return sync(fs.loop, body.read)


class Storage:
    """A table root on one filesystem. Paths given to methods are relative to the root."""

    def __init__(self, uri: str, storage_options: dict | None = None):
        if not isinstance(uri, str) or not uri.strip() or "\x00" in uri:
            raise InvalidURIError(f"table URI must be a non-empty string without NUL, got {uri!r}")
        if storage_options is not None and not isinstance(storage_options, dict):
            raise InvalidURIError("storage_options must be a dict")
        opts = dict(storage_options or {})
        if not uri.startswith(("file:", "/", ".")) and "://" in uri:
            # Object-store listings are cached by fsspec and would hide other writers' commits
            # (s3fs even answers a GET from a stale listing): the log must always see the store.
            opts.setdefault("use_listings_cache", False)
        try:
            if uri.lower().startswith("hdfs://"):
                fs, root = _webhdfs(uri, opts)
            else:
                fs, root = fsspec.core.url_to_fs(uri, **opts)
        except MissingDependencyError:
            raise
        except (ValueError, ImportError, TypeError) as e:
            raise InvalidURIError(f"cannot open table URI {self._safe_uri(uri)!r}: {e}") from None
        self.fs = fs
        self.root = root.rstrip("/") or "/"
        self.uri = uri
        self.protocol = fs.protocol if isinstance(fs.protocol, str) else fs.protocol[0]
        self.is_local = self.protocol in ("file", "local")
        # hdfs:// and webhdfs:// alike: HDFS reached over WebHDFS's REST calls
        self.is_hdfs = self.protocol.lower() == "webhdfs"
        if self.is_hdfs:
            self.protocol = "hdfs"
        # Test hook: called with a step name before each write; raising simulates a crash.
        self.fault_hook: Callable[[str, str], None] | None = None

    @staticmethod
    def _safe_uri(uri: str) -> str:
        return _redacted(uri)

    def __repr__(self) -> str:
        if self.is_hdfs:       # the NameNode is in the URI, not in the path
            return f"Storage({self._safe_uri(self.uri)})"
        return f"Storage({self.protocol}://{self.root})"

    def path(self, rel: str) -> str:
        return posixpath.join(self.root, rel) if rel else self.root

    def fault(self, step: str, rel: str) -> None:
        """A crash point: tests set `fault_hook` to fail or kill the process at one step."""
        if self.fault_hook is not None:
            self.fault_hook(step, rel)

    # --- reads ------------------------------------------------------------------------
    @property
    def is_s3(self) -> bool:
        """An s3fs store: reads are plain (ranged) get_object calls, no HEAD first."""
        return self.protocol in ("s3", "s3a") and hasattr(self.fs, "split_path")

    def read(self, rel: str) -> bytes:
        """All bytes of a file: one GET on S3 (no HEAD for its size first)."""
        p = self.path(rel)
        if self.is_s3:
            # s3fs's cat_file asks the size (a HEAD) first to split big files into parallel
            # ranges; a plain get_object answers from the store itself, never from a listing.
            return self._get_object(p)[0]
        if self.is_hdfs:
            # one OPEN (the NameNode redirects to a DataNode): no GETFILESTATUS first
            return _webhdfs_call(self.fs, "OPEN", "GET", p).content
        try:
            return self.fs.cat_file(p)
        except NotADirectoryError as e:
            raise FileNotFoundError(str(e)) from None
        except FileNotFoundError:
            if self.is_local:
                raise
            self.fs.invalidate_cache(p)      # never trust a cached listing over the store
            return self.fs.cat_file(p)

    def read_buffer(self, rel: str) -> pa.Buffer:
        """All bytes of a file as an Arrow buffer. A local file is read into Arrow's memory pool,
        which a whole-file read (the CRC check, then a decode) frees back for the decoded columns
        to reuse, where Python bytes of its size are fresh pages each time."""
        if self.is_local:
            import pyarrow.fs as pafs
            with pafs.LocalFileSystem().open_input_file(self.path(rel)) as f:
                return f.read_buffer()
        return pa.py_buffer(self.read(rel))

    def read_range(self, rel: str, start: int, end: int) -> tuple[bytes, int | None]:
        """Bytes [start, end) of a file, and the file's whole size when the store says it
        without another request (S3's Content-Range), else None."""
        p = self.path(rel)
        if self.is_s3:
            return self._get_object(p, f"bytes={start}-{end - 1}")
        if self.is_hdfs:
            return _webhdfs_call(self.fs, "OPEN", "GET", p, offset=start, length=end - start).content, None
        try:
            return self.fs.cat_file(p, start=start, end=end), None
        except NotADirectoryError as e:
            raise FileNotFoundError(str(e)) from None

    def _get_object(self, p: str, byte_range: str | None = None) -> tuple[bytes, int | None]:
        """One S3 GET (of a range, or the whole object), and the object's size when S3 says it."""
        bucket, key, _ = self.fs.split_path(p)
        try:
            resp = self.fs.call_s3("get_object", Bucket=bucket, Key=key, **({"Range": byte_range} if byte_range else {}))
        except NotADirectoryError as e:
            raise FileNotFoundError(str(e)) from None
        body = resp["Body"]
        try:
            data = _sync_read(self.fs, body)
        finally:
            body.close()
        total = None
        cr = resp.get("ContentRange") or ""
        if "/" in cr and cr.rsplit("/", 1)[1].isdigit():
            total = int(cr.rsplit("/", 1)[1])
        elif byte_range is None:
            total = len(data)
        return data, total

    def exists(self, rel: str) -> bool:
        return self.fs.exists(self.path(rel))

    def size(self, rel: str) -> int:
        return int(self.fs.size(self.path(rel)))

    def list(self, rel_dir: str) -> list[str]:
        """Names (not paths) directly below rel_dir; empty if it does not exist."""
        try:
            entries = self.fs.ls(self.path(rel_dir), detail=False, refresh=True) \
                if not self.is_local else self.fs.ls(self.path(rel_dir), detail=False)
        except (FileNotFoundError, NotADirectoryError):
            return []
        return [posixpath.basename(e.rstrip("/")) for e in entries]

    def arrow_filesystem(self) -> Any:
        """The filesystem for pyarrow readers (pyarrow maps fsspec's local fs to its native one)."""
        return self.fs

    # --- writes -----------------------------------------------------------------------
    def write(self, rel: str, data: bytes | pa.Buffer) -> int:
        """Write an immutable file under a fresh unique name. Returns its size."""
        self.fault("write", rel)
        p = self.path(rel)
        if self.is_local:
            os.makedirs(posixpath.dirname(p), exist_ok=True)
        if self.is_hdfs:      # as a PUT on S3: a hint file (_last_checkpoint) is written again
            _webhdfs_create(self.fs, p, bytes(data), overwrite=True)
            return len(data) if not isinstance(data, pa.Buffer) else data.size
        # A local file takes the Arrow buffer as it is; object stores' clients want bytes.
        self.fs.pipe_file(p, bytes(data) if isinstance(data, pa.Buffer) and not self.is_local else data)
        return len(data) if not isinstance(data, pa.Buffer) else data.size

    def open_write(self, rel: str):
        """A binary file to stream an immutable file into under a fresh unique name (a multipart
        upload on S3: nothing is visible until close)."""
        self.fault("write", rel)
        p = self.path(rel)
        if self.is_local:
            os.makedirs(posixpath.dirname(p), exist_ok=True)
        return self.fs.open(p, "wb")

    def put_if_absent(self, rel: str, data: bytes) -> bool:
        """Create rel atomically with data, only if it does not exist. False if it did."""
        self.fault("commit", rel)
        p = self.path(rel)
        if self.is_local:
            d = posixpath.dirname(p)
            os.makedirs(d, exist_ok=True)
            tmp = posixpath.join(d, f".tmp-{uuid.uuid4().hex}")
            with open(tmp, "wb") as f:
                f.write(data)
                f.flush()
                os.fsync(f.fileno())
            try:
                self.fault("commit-link", rel)
                os.link(tmp, p)
                return True
            except FileExistsError:
                return False
            finally:
                try:
                    os.unlink(tmp)
                except FileNotFoundError:
                    pass
        if self.is_hdfs:
            return self._hdfs_put_if_absent(rel, p, data)
        try:
            if self.protocol in ("s3", "s3a"):
                self.fs.pipe_file(p, data, mode="create")
            else:
                with self.fs.open(p, "xb") as f:
                    f.write(data)
            return True
        except FileExistsError:
            return False
        except OSError as e:
            # s3 answers 412 Precondition Failed when the key exists.
            if "412" in str(e) or "PreconditionFailed" in str(e):
                return False
            raise

    def _hdfs_put_if_absent(self, rel: str, p: str, data: bytes) -> bool:
        """HDFS: create a temporary file beside p (create with overwrite=false), then rename it to p
        with rename2's NONE option, which the NameNode refuses if p exists. A create of p itself is
        exclusive too, but p would be visible while the DataNode still writes it: a reader could list
        the version and read an empty or cut commit. The rename makes it visible whole, as the local
        hard link does (§8.1)."""
        tmp = posixpath.join(posixpath.dirname(p), f".tmp-{uuid.uuid4().hex}")
        _webhdfs_create(self.fs, tmp, data)
        try:
            self.fault("commit-link", rel)
            _webhdfs_call(self.fs, "RENAME", "PUT", tmp, destination=p, renameoptions="NONE")
            tmp = None
            return True
        except FileExistsError:
            return False
        finally:
            if tmp is not None:
                try:
                    _webhdfs_call(self.fs, "DELETE", "DELETE", tmp)
                except OSError:
                    pass

    def delete(self, rel: str) -> None:
        try:
            self.fs.rm_file(self.path(rel))
        except FileNotFoundError:
            pass

    def delete_quietly(self, rels: list[str]) -> None:
        """Best-effort removal of files no commit references (a failed write's own files)."""
        for r in rels:
            self.fault("delete", r)
            try:
                self.delete(r)
            except (OSError, TableFormatError):
                pass


# --- HDFS over WebHDFS ----------------------------------------------------------------------
HDFS_OPTIONS = ("namenode_http_address", "user", "kerberos", "kerb_kwargs", "token", "proxy_to",
                "use_https", "data_proxy", "session_cert", "session_verify")
DEFAULT_NAMENODE_HTTP_PORT = 9870         # Hadoop 3's dfs.namenode.http-address (9871 for https)


def _webhdfs(uri: str, opts: dict):
    """hdfs://namenode[:rpc_port]/path as fsspec's WebHDFS client, and the path.

    The RPC port in the URI is what Spark and Hadoop use; WebHDFS is served on the NameNode's
    HTTP address (`namenode_http_address`, "host:port" or a URL; default: the URI's host on 9870,
    9871 with use_https)."""
    try:
        from fsspec.implementations.webhdfs import WebHDFS
    except ImportError as e:
        raise MissingDependencyError(f"hdfs:// needs requests (pip install -e '.[hdfs]'): {e}") from None
    u = urllib.parse.urlsplit(uri)
    if not u.hostname:
        raise ValueError("an hdfs:// URI names its NameNode: hdfs://namenode:8020/path")
    opts = {k: v for k, v in opts.items() if k != "use_listings_cache"}
    unknown = sorted(set(opts) - set(HDFS_OPTIONS))
    if unknown:
        raise ValueError(f"unknown storage_options {unknown} for hdfs:// (known: {list(HDFS_OPTIONS)})")
    addr = str(opts.pop("namenode_http_address", "") or "")
    if "://" in addr:
        scheme, addr = addr.split("://", 1)
        opts.setdefault("use_https", scheme.lower() == "https")
    host, _, port = addr.rstrip("/").rpartition(":") if ":" in addr else (addr, "", "")
    port = int(port) if port else DEFAULT_NAMENODE_HTTP_PORT + (1 if opts.get("use_https") else 0)
    if opts.get("user") is not None:
        opts["user"] = str(opts["user"])
    return WebHDFS(host or u.hostname, port=port, **opts), u.path or "/"


def _webhdfs_call(fs, op: str, method: str, path: str, data: bytes | None = None, redirect: bool = True,
                  **params):
    """One WebHDFS request (following the NameNode's redirect to a DataNode when `redirect`),
    with WebHDFS's RemoteException mapped to Python's errors."""
    url = fs.url + urllib.parse.quote(path, safe="/")
    out = fs.session.request(method, url, params={**params, **fs.pars, "op": op}, data=data,
                             allow_redirects=redirect)
    if out.status_code >= 400:
        _raise_webhdfs(out, op, path)
    return out


def _raise_webhdfs(out, op: str, path: str):
    try:
        err = out.json()["RemoteException"]
        exc, msg = err.get("exception", ""), err.get("message", "")
    except (ValueError, KeyError, TypeError):
        exc, msg = "", out.text[:200]
    if exc == "FileAlreadyExistsException" or (op == "RENAME" and "already exists" in msg):
        raise FileExistsError(msg or path)
    if exc == "FileNotFoundException" or out.status_code == 404:
        raise FileNotFoundError(msg or path)
    if exc in ("AccessControlException", "SecurityException") or out.status_code in (401, 403):
        raise PermissionError(f"HDFS refused {op} {path}: {msg}")
    raise OSError(f"WebHDFS {op} {path} failed ({out.status_code} {exc}): {msg}")


def _data_node(fs, location: str) -> str:
    """The DataNode URL of a redirect, through the client's data_proxy (a dict or a callable)."""
    proxy = fs.proxy
    if callable(proxy):
        return proxy(location)
    for k, v in (proxy or {}).items():
        location = location.replace(k, v, 1)
    return location


def _webhdfs_create(fs, path: str, data: bytes, overwrite: bool = False) -> None:
    """CREATE: the NameNode names a DataNode, which creates the file (with overwrite=false: only if
    it does not exist, FileExistsError otherwise) and writes the bytes. Two requests; fsspec's writer
    makes four (an empty create, then an append)."""
    out = _webhdfs_call(fs, "CREATE", "PUT", path, redirect=False, overwrite=str(overwrite).lower())
    loc = out.headers.get("Location")
    if not loc:
        raise OSError(f"WebHDFS CREATE {path}: the NameNode named no DataNode ({out.status_code})")
    res = fs.session.put(_data_node(fs, loc), data=data, headers={"content-type": "application/octet-stream"})
    if res.status_code >= 400:
        _raise_webhdfs(res, "CREATE", path)

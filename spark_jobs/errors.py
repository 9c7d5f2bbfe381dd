"""Typed tableformat errors back out of Spark's wrappers.

A data-source write (`df.write.format("tableformat")...save(uri)`) raises in
the commit, inside a Python worker the JVM started, and the driver sees
`AnalysisException [PYTHON_DATA_SOURCE_ERROR] ... DuplicateKeyError: ...`;
an executor task fails as `PythonException` in the same way. These rebuild
the tableformat error that the message names, so callers catch the typed
class as with the engine and the job functions (which raise it directly):

    from spark_jobs.errors import typed_errors
    with typed_errors():                          # DuplicateKeyError, not AnalysisException
        df.write.format("tableformat").mode("append").save(uri)
"""
from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager

import tableformat as tf

_NAMED = re.compile(r"tableformat\.(?:format\.)?errors\.(\w+): (.*)")   # the error's module: tableformat.format.errors
_COUNT = re.compile(r"^(\d+) key\(s\)")


def typed_error(exc: BaseException) -> tf.TableFormatError | None:
    """The tableformat error a Spark exception carries (the last one its message names), as an instance
    of its own class with the same message; None when it carries none."""
    if isinstance(exc, tf.TableFormatError):
        return exc
    found = None
    for m in _NAMED.finditer(str(exc)):
        cls = getattr(tf, m.group(1), None)
        if isinstance(cls, type) and issubclass(cls, tf.TableFormatError):
            found = cls, m.group(2).strip()
    if found is None:
        return None
    cls, message = found
    message = re.sub(r"\s*SQLSTATE: \w+$", "", message)
    err = cls(message)
    count = _COUNT.match(message)
    if count and hasattr(err, "count"):
        err.count = int(count.group(1))
    return err


@contextmanager
def typed_errors() -> Iterator[None]:
    """Re-raise a Spark exception that carries a tableformat error as that error (chained to it)."""
    try:
        yield
    except Exception as e:  # noqa: BLE001 - only re-raised, typed when it carries a tableformat error
        typed = typed_error(e)
        if typed is None or typed is e:
            raise
        raise typed from e

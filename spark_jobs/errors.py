"""Typed tableformat errors back out of Spark's wrappers.

One condition is one class on both sides (specs/format.md §9.5): the JVM reader's errors
(`tableformat.log.*Error`, named as the engine names them) and the engine's errors raised inside
a Python worker reach the driver wrapped by Spark. `typed_error` gives back the engine's class:

- a JVM error (the catalog, `tableformat-jvm`): Py4J's `Py4JJavaError`, or pyspark's
  `AnalysisException` / `SparkException` / `StreamingQueryException` raised while handling one
  (its `__context__`), holds the Java exception (`java_exception`); its causes are walked to
  the first of ours, whose class name (`errorName()`) and message are taken as they are;
- an engine error in a Python worker (a data-source write's commit, the change stream, an
  executor task) reaches the driver only as text, `[PYTHON_DATA_SOURCE_ERROR] ...
  tableformat.format.errors.DuplicateKeyError: ...`: the last error the message names.

    from spark_jobs.errors import typed_errors
    with typed_errors():                          # DuplicateKeyError, not AnalysisException
        df.write.format("tableformat").mode("append").save(uri)
"""
from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import tableformat as tf

# the error's module in a traceback's text: tableformat.format.errors (a Python worker), tableformat.log (the
# JVM's class, in a stream's or Spark Connect's text: "tableformat.log.X: msg", "(tableformat.log.X) msg")
_NAMED = re.compile(r"\(?tableformat\.(?:(?:format\.)?errors|log)\.(\w+)(?::|\)) (.*)")
_COUNT = re.compile(r"^(\d+) key\(s\)")
_JVM_BASE = "tableformat.log.TableFormatError"     # the JVM reader's base class (TableFormatError.java)
_MAX_CHAIN = 32                                    # causes followed, far past any Spark wrapping


def typed_error(exc: BaseException) -> tf.TableFormatError | None:
    """The tableformat error a Spark exception carries, as an instance of the engine's class with
    the same message; None when it carries none."""
    if isinstance(exc, tf.TableFormatError):
        return exc
    from py4j.protocol import Py4JError
    for e in _python_chain(exc):
        java = getattr(e, "java_exception", None)          # py4j's Py4JJavaError
        found = _jvm_error(java) if java is not None else None
        if found is not None:
            return found
    try:
        text = str(exc)                        # a captured exception's text asks the JVM for its stack trace
    except (Py4JError, OSError):               # the JVM is gone: py4j's error, or the refused connection
        return None
    return _named_in_message(text)


def _python_chain(exc: BaseException) -> Iterator[BaseException]:
    """exc, then what it was raised from, or the exception pyspark converted (it raises its own
    `from None` while handling Py4J's: `__context__` with `__suppress_context__`). Never an
    exception that was merely being handled when another error was raised: that one is unrelated."""
    seen: set[int] = set()
    e: BaseException | None = exc
    while e is not None and id(e) not in seen and len(seen) < _MAX_CHAIN:
        seen.add(id(e))
        yield e
        e = e.__cause__ or (e.__context__ if e.__suppress_context__ else None)


def _jvm_error(java: Any) -> tf.TableFormatError | None:
    """The first tableformat error in a Java exception's cause chain, as the engine's class."""
    from py4j.protocol import Py4JError
    t = java
    try:
        for _ in range(_MAX_CHAIN):           # Throwable.getCause() is null at the root, never itself
            if t is None:
                return None
            name = _ours(t)
            if name is not None:
                return _engine_error(name, str(t.getMessage() or ""))
            t = t.getCause()
    except (Py4JError, OSError):              # the JVM is gone (a stopped session): nothing left to ask
        return None
    return None


def _ours(throwable: Any) -> str | None:
    """The engine's name of a Java throwable that is one of the JVM reader's errors (None: it is not)."""
    cls = throwable.getClass()
    while cls is not None:
        if cls.getName() == _JVM_BASE:
            return str(throwable.errorName())
        cls = cls.getSuperclass()
    return None


def _engine_error(name: str, message: str) -> tf.TableFormatError:
    cls = getattr(tf, name, None)
    if not (isinstance(cls, type) and issubclass(cls, tf.TableFormatError)):
        cls = tf.TableFormatError              # a JVM class the engine lacks: still typed, named in the text
        message = f"{name}: {message}"
    return _counted(cls(message), message)


def _counted(err: tf.TableFormatError, message: str) -> tf.TableFormatError:
    """A DuplicateKeyError's count, from its message's "N key(s)" (the engine's and the JVM's alike)."""
    count = _COUNT.match(message)
    if count and hasattr(err, "count"):
        err.count = int(count.group(1))
    return err


def _named_in_message(text: str) -> tf.TableFormatError | None:
    """The last engine error a Python worker's traceback text names (no structure crosses from it)."""
    found = None
    for m in _NAMED.finditer(text):
        cls = getattr(tf, m.group(1), None)
        if isinstance(cls, type) and issubclass(cls, tf.TableFormatError):
            found = cls, m.group(2).strip()
    if found is None:
        return None
    cls, message = found
    message = re.sub(r"\s*SQLSTATE: \w+$", "", message)
    return _counted(cls(message), message)


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

"""Every error the format raises.

Each says what was wrong and what to do. A failed call commits nothing, so
catching one of these always leaves the table as it was.
"""
from __future__ import annotations


class TableFormatError(Exception):
    """Base of every error raised by tableformat."""


# --- schema and table definition -------------------------------------------------

class SchemaError(TableFormatError, ValueError):
    """The schema is invalid: bad type, name, key, default or limit."""


class SequenceColumnError(SchemaError):
    """The sequence_column property names no column, a key column, a nullable one or one without a total order."""


class InvalidIdentifierError(SchemaError):
    """A table or column name is empty, too long, not UTF-8 or has forbidden characters."""


class SchemaChangedError(SchemaError):
    """A DataFrame, view or stream planned on one schema reads a version whose columns differ (a
    column dropped, renamed or re-typed since; for a stream, one added too: columns match by ID,
    specs/format.md §11). Define
    the DataFrame or view again, or restart the query. The JVM reader raises the same class."""


class PartitionSchemaError(TableFormatError, ValueError):
    """The partitioning is invalid: unknown or non-key column, overlapping ranges, bad splits."""


class InvalidOptionError(TableFormatError, ValueError):
    """An option or table property has a bad value (negative, absurd, or of the wrong type)."""


# --- tables and storage -----------------------------------------------------------

class InvalidURIError(TableFormatError, ValueError):
    """The table URI cannot be parsed or names an unknown filesystem."""


class PathOverlapError(InvalidOptionError):
    """An output path (a Delta or Iceberg mirror, an export, a backfill, a CLI output or rejects file) is the
    table's directory, lies inside it, or holds it: writing there, or a foreign tool cleaning
    there (Delta VACUUM, an overwrite), would destroy the table's files. Give a path outside."""


class TableNotFoundError(TableFormatError, FileNotFoundError):
    """There is no table at the URI (no transaction log)."""


class TableReplacedError(TableNotFoundError):
    """The table this handle (or cache) was opened on is gone: the path now holds another table
    (a different table_id). Open the path again to work with the new table."""


class TableExistsError(TableFormatError, FileExistsError):
    """create_table was called on a location that already holds a table."""


class UnsupportedFormatVersionError(TableFormatError):
    """The table was written by a newer format version than this reader knows."""


class CorruptFileError(TableFormatError):
    """A data, index or log file is truncated, has the wrong size or fails its checksum."""


class MissingDependencyError(TableFormatError, ImportError):
    """An optional library a feature needs is not installed; the message names the extra."""


class CommitConflictError(TableFormatError):
    """A commit lost too many races, or rebasing onto a concurrent commit is impossible."""


class RestartRequired(CommitConflictError):
    """Commits that won the race invalidated what a write planned: plan it again on a new
    snapshot. The engine's own writes do so by themselves; a job committing write fragments
    (Spark) gets this error and runs again."""


class VersionNotFoundError(TableFormatError, ValueError):
    """as_of names a version or timestamp the log does not have."""


class TimestampAfterLatestError(VersionNotFoundError):
    """`as_of` a timestamp after the newest commit's: a commit may still land at or before it,
    so the answer would not be repeatable (Delta refuses these too). Ask for the latest
    (as_of=None) or a timestamp at or before the newest commit's."""


# --- data -------------------------------------------------------------------------

class InvalidDataError(TableFormatError, ValueError):
    """Input rows do not fit the schema. Subclasses name the exact reason."""


class ColumnNotFoundError(TableFormatError, KeyError):
    """A column name is not in the current schema, or its type or nullability is not what the caller expects."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else ""


class UnknownColumnError(InvalidDataError, ColumnNotFoundError):
    """Input has a column the table does not have."""


class SchemaMismatchError(InvalidDataError):
    """An input file's columns or values do not fit the table's schema (an unknown column, a value
    that does not parse as the column's type)."""


class MissingColumnError(InvalidDataError):
    """Input lacks a non-null column that has no default."""


class TypeMismatchError(InvalidDataError):
    """An input column's type cannot be converted losslessly to the column's type."""


class NullValueError(InvalidDataError):
    """A NULL in a primary key column or in a non-nullable column."""


class CellTooLargeError(InvalidDataError):
    """A string or binary cell over 64 KiB, or an encoded primary key over 16 KiB."""


class DecimalOutOfRangeError(InvalidDataError):
    """A decimal value needs more digits than the column's precision allows."""


class NoRangePartitionError(InvalidDataError):
    """A row's key falls in no range partition of the table."""


class InvalidFilterError(TableFormatError, ValueError):
    """A scan filter names an unknown column, an unknown operator or a bad value."""


class UnknownScanColumnError(InvalidFilterError, ColumnNotFoundError):
    """A scan's columns or filter name a column the schema does not have."""


class DuplicateKeyError(TableFormatError):
    """Inserted keys already exist in the table, or appear twice in the batch."""

    def __init__(self, message: str, count: int = 0, keys: tuple = ()):
        super().__init__(message)
        self.count = count
        self.keys = keys


class ContradictoryFragmentsError(DuplicateKeyError):
    """Fragments of one commit write one key with no single meaning: one inserts it and another
    updates, deletes or upserts it (they read one snapshot and have no order); commit them apart."""


class KeyNotFoundError(TableFormatError):
    """An update or delete names a key that does not exist (or was deleted)."""

    def __init__(self, message: str, count: int = 0, keys: tuple = ()):
        super().__init__(message)
        self.count = count
        self.keys = keys


class KeyColumnUpdateError(TableFormatError, ValueError):
    """Primary key columns cannot be updated: delete the row and insert the new key."""


class HistoryExpiredError(TableFormatError):
    """Time travel to before the retained history (history_max_age)."""


class TagNotFoundError(VersionNotFoundError):
    """`as_of` or untag names a tag the table does not have."""


class TagExistsError(TableFormatError):
    """A tag of that name exists: untag it first, or pick another name."""


class InvalidTagNameError(InvalidOptionError):
    """A tag name must be a letter or underscore, then letters, digits, `_`, `.` or `-` (at most 128)."""


class RestoreError(TableFormatError):
    """A restore that cannot be done (e.g. the schema changed since the version restored)."""


class NativeReadUnavailableError(TableFormatError):
    """A native (JVM Parquet) read was required but some rowset cannot be read that way:
    the JVM cannot open the table's URI scheme, or the version needs UNDO records. Use
    path="auto" to fall back to the Python data source for those rowsets."""


class MirrorError(TableFormatError):
    """A Delta or Iceberg mirror cannot be written: its log or metadata was written concurrently
    or cleaned up, or a rowset cannot be expressed in the format and compaction was not allowed."""


class ExportSchemaError(TableFormatError, ValueError):
    """A change export cannot carry a schema change into its sink: a Delta change log (append
    mode) keeps every column it ever had by name, so a column dropped and added again under the
    same name with another type cannot join it. The message names the way on."""


class TxnAlreadyCommittedError(TableFormatError):
    """An application transaction (a streaming query's batch: app id and version, specs/format.md
    §8.2 `txn`) is already in the table, at this version or a newer one: the write committed
    nothing and deleted its files. A sink replaying a batch after a crash treats it as done."""

    def __init__(self, message: str, app_id: str = "", version: int = -1, committed: int = -1):
        super().__init__(message)
        self.app_id, self.version, self.committed = app_id, version, committed

"""tableformat: Kudu's tablet storage design as a table format on object storage.

The public API is small: a Schema of Columns, a PartitionSchema, and
create_table / open_table returning a Table. Everything else is internal.
"""
from .errors import *  # noqa: F401,F403  (the error classes are public)
from .partition import HashPartition, PartitionSchema, RangePartition
from .schema import Column, Schema
from .table import Snapshot, Table, Timestamp, WriteResult, create_table, open_table
from .metadata import CommitInfo, FORMAT_VERSION

__all__ = ["Column", "Schema", "HashPartition", "RangePartition", "PartitionSchema", "Table", "Snapshot",
           "Timestamp", "WriteResult", "CommitInfo", "create_table", "open_table", "FORMAT_VERSION"]
__version__ = "0.1.0"

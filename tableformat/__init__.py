"""tableformat: Kudu's tablet storage design as a table format on object storage.

The public API is what this module exports: a Schema of Columns, a
PartitionSchema, create_table / open_table returning a Table, Snapshots that
scan and plan writes into WriteFragments, and the values those use. Jobs that
run elsewhere (spark_jobs/, airflow/) use only these names; every other module
is internal. specs/format.md is the on-disk contract.
"""
from .format.errors import *  # noqa: F401,F403  (the error classes are public)
from .format import errors  # noqa: F401  (tf.errors, the module of the error classes, as before the wings)
from .interop.delta_mirror import MirrorResult
from .interop.iceberg_mirror import IcebergMirrorResult
from .maintenance.compaction_policy import CompactionAction, CompactionPlan, CompactionPolicy, KuduPolicy
from . import format
from .format.constants import DeltaOp
from .log.changes import ChangePart, ChangePlan, compute_part as compute_changes
from .log.fragment import WriteFragment
from .format.metadata import FORMAT_VERSION, CommitInfo
from .log.mvcc import Timestamp, parse_as_of
from .write.rolling_writer import RollingRowSetWriter
from .format.partition import HashPartition, PartitionSchema, RangePartition
from .read.predicate import Predicate
from .read.rowset_plan import BaseFilePlan, DeltaFilePlan, ReadPlan, RowSetPlan
from .read.scan import Scanner, ScanTask
from .format.schema import Column, Schema
from .format.storage import Storage, check_outside_table
from .write.result import WriteResult
from .snapshot import Snapshot
from .table import Table, create_table, open_table
from .log.transaction import CommitProperties
from .maintenance.vacuum import VacuumPlan, VacuumResult

__all__ = ["Column", "Schema", "HashPartition", "RangePartition", "PartitionSchema", "Table", "Snapshot",
           "Timestamp", "WriteResult", "CommitInfo", "create_table", "open_table", "FORMAT_VERSION",
           "WriteFragment", "RollingRowSetWriter", "CommitProperties", "CompactionAction", "CompactionPlan",
           "CompactionPolicy", "KuduPolicy", "Scanner", "ScanTask", "ReadPlan", "RowSetPlan", "BaseFilePlan",
           "DeltaFilePlan", "DeltaOp", "format", "Predicate", "Storage", "VacuumPlan", "VacuumResult", "parse_as_of",
           "MirrorResult", "IcebergMirrorResult", "check_outside_table", "ChangePlan", "ChangePart", "compute_changes"]
__version__ = "0.1.0"

"""The format wing: the bytes (specs/format.md §1-§7, §9) - errors, types, schema, key encoding,
hashing, partitioning, bloom filters, rowsets (Parquet base + PK index), delta files, storage, and the
table metadata they describe. It imports no other wing.

`tableformat.format` itself is public: the names and codes a reader in another language needs
(`constants`), re-exported here so `tf.format.DeltaOp` and `tf.format.field_name` read as before.
"""
from .constants import *  # noqa: F401,F403  (tf.format is the constants' public name)

"""The read wing: scans, predicates, key probes and lookups, delta application, read plans for
foreign readers, metadata tables (specs/format.md §4.2, §9.1, §9.4, §13). It reads a table state; it imports
only the format wing."""

"""The maintenance wing: compaction policy and execution (minor, major, merging, UNDO GC),
restore, tags, vacuum, check (specs/format.md §9.3, §12). It imports the wings below it;
the exceptions (operations planned on the facade's Snapshot, vacuum keeping a mirror's files)
are listed in tests/project/test_layering.py."""

"""The log wing: the history (specs/format.md §8, §9.2, §10, §14) - typed actions, the log and
checkpoints, MVCC, the handle, transactions, requirements and the conflict matrix, write
fragments, remapping, the change feed. Requirements probe keys, so it imports the read wing
and the format wing."""

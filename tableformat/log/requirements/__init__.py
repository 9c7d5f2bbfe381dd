"""Requirements: what a write relies on, checked against exactly the commits that won
(specs/format.md §10). This package owns every requirement class; importing it registers them
all, so any requirement a log or a Spark task carries can be read back (`Requirement.from_json`).

A writer plans on a snapshot. If another commit lands first, each requirement of the loser finds
whether a winner touched what it relies on (keys, rows, rowsets, the definition, a tag, the
history); if one did, the conflict matrix (`matrix.decide`) gives the outcome: REBASE, RESTART or
FAIL. `base` holds the protocol; the classes are grouped by what they guard.
"""
from .base import (REBASE, REQUIREMENTS, Context, Requirement, Verdict, check_all, new_rowsets, no_rebase,
                   pack_rowids, strictest, unpack_rowids)
from .keys import InsertsUnread, KeysAbsent, OfKind, RowsLive, SkippedKeysStillLive
from .retention import HistoryKept, TagAbsent, TagPresent, TagsRetained
from .rowsets import (DataUnchanged, DefinitionUnchanged, MergeInputsRemappable, NoRowsInTablets, RowSetsDisjoint,
                      RowSetsUnchanged)
from .sequence import SequencesCurrent
from .txn import TxnUnseen

__all__ = ["REBASE", "REQUIREMENTS", "Context", "Requirement", "Verdict", "check_all", "new_rowsets", "no_rebase",
           "pack_rowids", "strictest", "unpack_rowids",
           "InsertsUnread", "KeysAbsent", "OfKind", "RowsLive", "SkippedKeysStillLive",
           "HistoryKept", "TagAbsent", "TagPresent", "TagsRetained",
           "DataUnchanged", "DefinitionUnchanged", "MergeInputsRemappable", "NoRowsInTablets", "RowSetsDisjoint",
           "RowSetsUnchanged", "SequencesCurrent", "TxnUnseen"]

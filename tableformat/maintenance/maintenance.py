"""Maintenance (Kudu's maintenance manager): run compaction actions, each in its own commit.

The policy (`compaction_policy`) picks scored actions under a byte budget; each
action is planned on the latest snapshot (`compaction.write_compaction`) and
committed alone, so a long plan makes progress action by action, and an action
whose inputs changed concurrently gives up (the next plan sees the new state).
"""
from __future__ import annotations

from ..format import arguments as arg
from ..log import mvcc
from .compaction_policy import CompactionAction, CompactionPlan, CompactionPolicy, KuduPolicy
from ..format.errors import CommitConflictError
from ..log.handle import TableHandle
from ..write.result import WriteResult, rewrite_result
from ..snapshot import Snapshot
from ..log.transaction import COMPACTION_PROPERTIES, Transaction

# A compaction budget above 1 TiB is no budget: the knapsack works in MiB cells.
MAX_BUDGET_BYTES = 1 << 40
DEFAULT_BUDGET_BYTES = 256 * 1024 * 1024


def compaction_plan(handle: TableHandle, budget_bytes: int = DEFAULT_BUDGET_BYTES,
                    policy: CompactionPolicy | None = None) -> CompactionPlan:
    """What compaction would do now: scored actions chosen under the byte budget (Kudu's policy)."""
    arg.integer(budget_bytes, "budget_bytes", 1, MAX_BUDGET_BYTES)
    arg.has_method(policy, "policy", "pick", "a compaction policy (an object with pick(), such as "
                   "tf.KuduPolicy())", none=True)
    state = handle.refresh()
    return (policy or KuduPolicy()).pick(state, budget_bytes, mvcc.ancient_history_mark(state))


def compact(handle: TableHandle, plan: CompactionPlan | None = None, budget_bytes: int = DEFAULT_BUDGET_BYTES,
            progress=None) -> list[WriteResult]:
    """Run a plan (the policy's when None). Each action commits on its own, so every argument
    is checked before the first one runs."""
    arg.instance(plan, "plan", CompactionPlan, "a tf.CompactionPlan (from Table.compaction_plan)", none=True)
    arg.integer(budget_bytes, "budget_bytes", 1, MAX_BUDGET_BYTES)
    arg.function(progress, "progress", none=True)
    if plan is not None:
        arg.sequence(plan.actions, "plan.actions")
        for a in plan.actions:
            arg.instance(a, "each action of the plan", CompactionAction, "a tf.CompactionAction")
    plan = plan if plan is not None else compaction_plan(handle, budget_bytes)
    results = []
    for i, action in enumerate(plan.actions):
        r = compact_action(handle, action)
        if r is not None:
            results.append(r)
        if progress is not None:
            progress(i + 1, len(plan.actions), action)
    return results


def compact_action(handle: TableHandle, action: CompactionAction) -> WriteResult | None:
    """Run one compaction action in one commit; None when it has nothing left to do or gave
    up because its inputs changed concurrently (the next plan sees the new state)."""
    arg.instance(action, "action", CompactionAction, "a tf.CompactionAction (from a CompactionPlan)")
    frag = Snapshot(handle.storage, handle.refresh()).write_compaction(action)
    if frag is None:
        return None
    try:
        commit = Transaction(handle, frag, COMPACTION_PROPERTIES).commit()
    except CommitConflictError:
        return None
    return rewrite_result(commit)

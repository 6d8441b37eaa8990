"""The plan's vocabulary: what kind of node each plan entry is, and how a value reaches a consumer.

The executor dispatches on these small integers in its hot loop; the plan builder
(exec/plan.py) and the branch analysis (exec/branches.py) assign them.
"""
from __future__ import annotations

# Node kinds. A COND_SWITCH is a Switch whose untaken side is skipped (exec/branches.py); an ASYNC
# node is a NORMAL one whose kernel may run on the pool (exec/recurrence.py).
# SEND and RECV are a cut edge's two halves (exec/rendezvous.py): a Send runs dead too, a Recv waits asynchronously.
NORMAL, MULTI, SWITCH, MERGE, LOOP_MERGE, ENTER, EXIT, NEXT, ASYNC, COND_SWITCH, SEND, RECV = range(12)
# Kinds whose consumers are one entry list; the others keep (port 0, port 1, control) lists.
SINGLE_OUTPUT_KINDS = frozenset({NORMAL, ENTER, EXIT, NEXT, ASYNC, SEND, RECV})

# Consumer-edge modes: how a value is handed to its consumer.
#   DIRECT         the consumer's only input: queued at once
#   PENDING        written into the consumer's pending-input record (exec/pending.py)
#   TO_MERGE       a cond Merge's input: it fires on the first live one
#   TO_LOOP_MERGE  a loop Merge's input: it fires on every one
#   TO_FETCH       a fetched value: "dst" is the fetch's index in the results
#   TO_GUARDED     PENDING into a skippable branch from outside it: dropped where it is skipped
#   TO_PRED        PENDING into a COND_SWITCH's predicate input: decides which branch is skipped
DIRECT, PENDING, TO_MERGE, TO_LOOP_MERGE, TO_FETCH, TO_GUARDED, TO_PRED = range(7)

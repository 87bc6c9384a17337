"""A scheduler's node pool (KAI's shard: ``--nodepool-label-key`` / ``--partition-label-value``) and which objects it
takes: the nodes, queues and PodGroups labelled with its pool, and of those PodGroups not the ones whose
``schedulingBackoff`` is used up in their pool (KAI's ``isPodGroupUpForScheduler``: a PodGroup with a backoff other
than -1, found unschedulable in its pool, waits for someone to move it to another pool).
"""

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from kai.components.scheduler.conditions import (
    DEFAULT_NODE_POOL,
    INVALID_OBJECT,
    first_reason,
    last_scheduling_condition,
)
from kai.core.model import names
from kai.core.model.errors import InvalidObject
from kai.core.model.meta import integer
from kai.core.state.fit_errors import NOT_READY

PARTITIONED = frozenset({"Node", "Queue", "PodGroup"})
NO_SCHEDULING_BACKOFF = -1
KAI_ONLY_REASONS = frozenset({NOT_READY, INVALID_OBJECT})
"""Reasons of the PodGroup conditions only kai writes: none of them is a try in the pool."""
SINGLE_SCHEDULING_BACKOFF = 1
"""A PodGroup tried once per pool: its unschedulable messages name the pool (KAI's ``Node-Pool '<pool>': ``)."""


@dataclass(frozen=True)
class NodePool:
    """A shard: its scheduler sees only the nodes, queues and PodGroups whose node-pool label has its value; with no
    value, only those without the label. An object re-labelled into another pool leaves this scheduler's state as
    if deleted. An empty key: no shards."""

    label_key: str = names.NODE_POOL_LABEL
    value: str = ""

    @property
    def shard(self) -> "NodePool | None":
        """This pool when the cluster is sharded (a label key), else None: one pool of every object."""
        return self if self.label_key else None

    @property
    def name(self) -> str:
        """The pool in this scheduler's texts: its value, KAI's ``default`` without one."""
        return self.value or DEFAULT_NODE_POOL

    def holds(self, kind: str, obj: Mapping[str, Any]) -> bool:
        if kind not in PARTITIONED or not self.label_key:
            return True
        labels = (obj.get("metadata") or {}).get("labels") or {}
        if self.value:
            return bool(labels.get(self.label_key) == self.value)
        return self.label_key not in labels

    def pool_of(self, obj: Mapping[str, Any]) -> str:
        """The pool an object's label names (``default`` without one): the pool of a PodGroup's conditions."""
        return self.pool_named(((obj.get("metadata") or {}).get("labels")) or {})

    def pool_named(self, labels: Mapping[str, Any]) -> str:
        value = labels.get(self.label_key)
        return DEFAULT_NODE_POOL if value is None or value == "" else str(value)

    def schedules(self, kind: str, obj: Mapping[str, Any]) -> bool:
        """Whether this scheduler takes the object: one of its pool, and up for scheduling."""
        return self.holds(kind, obj) and self.up_for_scheduling(kind, obj)

    def up_for_scheduling(self, kind: str, obj: Mapping[str, Any]) -> bool:
        """False for a PodGroup that used up its backoff in its pool (its last scheduling condition is of it). The
        conditions only kai writes do not count as a try: fewer pods than minMember so far, an object kai cannot use
        (KAI writes none for either)."""
        if kind != "PodGroup" or scheduling_backoff(obj) == NO_SCHEDULING_BACKOFF:
            return True
        last = last_scheduling_condition(obj)
        if last is None or first_reason(last) in KAI_ONLY_REASONS:
            return True
        return last.get("nodePool") != self.pool_of(obj)


def scheduling_backoff(podgroup: Mapping[str, Any]) -> int:
    """``spec.schedulingBackoff`` as the scheduler's parse reads it (-1 when unset, or unreadable: the parse reports
    that)."""
    try:
        value = integer(podgroup.get("spec") or {}, "schedulingBackoff", "PodGroup", "spec.schedulingBackoff", -1)
    except InvalidObject:
        return NO_SCHEDULING_BACKOFF
    return NO_SCHEDULING_BACKOFF if value is None else value

"""What ``kai queues`` shows, as data: the queue tree with each queue's numbers per resource, who borrows from
whom, and a queue's pending workloads in the order the scheduler would try them.

The numbers are the proportion plugin's at the start of the cycle (the cluster as it is): quota, limit and
over-quota weight as written; deserved and fair share as divided; allocated and requested as held and asked for
(the Queue statuses' figures). Borrowing is told among siblings, as quota is shared: a queue above its deserved
share borrows from siblings below theirs (their idle quota, in proportion), and what no sibling's idle quota
covers comes from capacity no sibling's quota claims ("unassigned").
"""

from collections.abc import Iterator
from typing import Any

from kai.components.insight.explain import explain_podgroup
from kai.components.insight.inspect import Inspection
from kai.components.insight.workload_podgroups import workload_of
from kai.core.model import names
from kai.core.state.pod_status import PodStatus
from kai.core.state.reasons import amount

RESOURCES = {"gpu": ("GPUs", 1.0), "cpu": ("cores", 1000.0), "memory": ("GB", 1e9)}


class NoQueues(LookupError):
    """No queue numbers to show: the config lacks the proportion plugin, or the queue asked for does not exist."""


def queue_tree(ins: Inspection) -> list[dict[str, Any]]:
    """Every usable queue, parents before children (siblings by name), with ``depth`` for indenting."""
    session = ins.opened
    if not session.queue_share_fns:
        raise NoQueues("the scheduler config runs no proportion plugin: there are no queue shares to show")
    shares = session.queue_share_fns[0]
    rows: list[dict[str, Any]] = []
    for uid, depth in _walk(ins, _tops(ins), 0):
        info = session.queues[uid]
        divided = shares(uid)
        per_resource = {}
        for resource, (unit, scale) in RESOURCES.items():
            spec = getattr(info.queue, resource)
            per_resource[resource] = {
                "unit": unit,
                "quota": amount(spec.quota, scale),
                "limit": amount(spec.limit, scale),
                "weight": spec.over_quota_weight,
                "deserved": amount(divided["deserved"][resource], scale),
                "fairShare": amount(divided["fairShare"][resource], scale),
                "allocated": amount(divided["allocated"][resource], scale),
                "requested": amount(divided["request"][resource], scale),
            }
        parent = info.parent if info.parent in session.queues else ""
        peers = ins.order.siblings.get(parent, ())
        rows.append(
            {
                "queue": uid,
                "displayName": info.name,
                "parent": parent,
                "depth": depth,
                "priority": info.priority,
                "order": {"place": peers.index(uid) + 1, "of": len(peers)} if uid in peers else None,
                "pendingInLine": sum(len(ins.order.by_queue.get(q, ())) for q in subtree(ins, uid)),
                "resources": per_resource,
            }
        )
    _borrowing(rows)
    return rows


def pending(ins: Inspection, queue: str) -> list[dict[str, Any]]:
    """The queue's (and its descendants') pending podgroups, in line first in the order they would be tried, then
    those not in line; each with its state, headline reason, what it needs that no change kai tries gives, and
    estimated start (proven fixes take a search each: ``kai explain`` runs it)."""
    if queue not in ins.opened.queues:
        raise NoQueues(f"queue {queue} does not exist (or cannot be used) in {ins.scenario.name}")
    queues = set(subtree(ins, queue))
    in_line = [key for key in ins.order.jobs if ins.opened.jobs[key].queue in queues]
    waiting = sorted(
        key
        for key, job in ins.opened.jobs.items()
        if job.queue in queues
        and key not in in_line
        and any(t.status is PodStatus.PENDING or t.status is PodStatus.GATED for t in job.tasks.values())
    )
    rows = []
    for key in [*in_line, *waiting]:
        job = ins.opened.jobs[key]
        told = explain_podgroup(ins, key)
        waiting_pods = [t for t in job.tasks.values() if t.status in (PodStatus.PENDING, PodStatus.GATED)]
        headline = told["reasons"][0] if told["reasons"] else None
        rows.append(
            {
                "podgroup": key,
                "workload": workload_of(ins.cluster, key),
                "queue": job.queue,
                "place": ins.order.jobs.index(key) + 1 if key in in_line else None,
                "pods": len(waiting_pods),
                "gpus": amount(sum(t.gpus_quota for t in waiting_pods)),
                "state": told["state"],
                "reason": headline,
                "needs": told["needs"],
                "estimatedStart": told["estimatedStart"],
            }
        )
    return rows


def subtree(ins: Inspection, queue: str) -> list[str]:
    return [uid for uid, _ in _walk(ins, [queue], 0)]


def _tops(ins: Inspection) -> list[str]:
    queues = ins.opened.queues
    return sorted(uid for uid, info in queues.items() if not info.parent or info.parent not in queues)


def _walk(ins: Inspection, uids: list[str], depth: int) -> Iterator[tuple[str, int]]:
    for uid in uids:
        yield uid, depth
        yield from _walk(ins, sorted(ins.opened.queues[uid].children), depth + 1)


def _borrowing(rows: list[dict[str, Any]]) -> None:
    """Per sibling group and resource: who borrows how much from whom (see the module docstring)."""
    groups: dict[str, list[dict[str, Any]]] = {}
    for row in rows:
        groups.setdefault(row["parent"], []).append(row)
        for numbers in row["resources"].values():
            numbers.update(borrows=[], lends=[], unassigned=0.0)
    for siblings in groups.values():
        for resource in RESOURCES:
            over, idle = {}, {}
            for row in siblings:
                numbers = row["resources"][resource]
                if numbers["deserved"] == names.UNLIMITED:
                    continue
                over[row["queue"]] = max(0.0, numbers["allocated"] - numbers["deserved"])
                idle[row["queue"]] = max(0.0, numbers["deserved"] - numbers["allocated"])
            total_over, total_idle = sum(over.values()), sum(idle.values())
            if not total_over:
                continue
            covered = min(total_over, total_idle)
            by_queue = {row["queue"]: row["resources"][resource] for row in siblings}
            for borrower, owed in over.items():
                if not owed:
                    continue
                taken = 0.0
                for lender, spare in idle.items():
                    part = amount(covered * owed / total_over * spare / total_idle) if total_idle else 0.0
                    if part <= 0:
                        continue
                    taken += part
                    by_queue[borrower]["borrows"].append({"from": lender, "amount": part})
                    by_queue[lender]["lends"].append({"to": borrower, "amount": part})
                by_queue[borrower]["unassigned"] = amount(max(0.0, owed - taken))

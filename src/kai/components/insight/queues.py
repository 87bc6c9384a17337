"""The queue tree of a view: each queue's numbers per resource, its podgroups running and waiting, and who borrows
from whom; queues kai cannot use are rows too, saying why, so a waiting podgroup is never left out.

The numbers are the proportion plugin's at the moment shown: quota, limit and over-quota weight as written; deserved
and fair share as divided; allocated and requested as held and asked for (the Queue statuses' figures); recent usage
as time-based fair share reads it. Counts and the oldest wait are of the queue's whole subtree, as Slurm's ``sshare``
sums an account's users. Borrowing is told among siblings, as quota is shared: a queue above its deserved share
borrows from siblings below theirs (their idle quota, in proportion), and what no sibling's idle quota covers comes
from capacity no sibling's quota claims ("unassigned").
"""

import difflib
from collections.abc import Iterator
from typing import Any

from kai.components.insight.inspect import Inspection
from kai.components.insight.view import RESOURCES, Amounts, PendingView, Place, QueueView
from kai.core.model import names
from kai.core.state.pod_status import ACTIVE_USED
from kai.core.state.reasons import amount


class NoQueues(LookupError):
    """No queue numbers to show: the config lacks the proportion plugin, or the queue asked for does not exist."""


def queue_rows(ins: Inspection, pending: list[PendingView]) -> list[QueueView]:
    """Every queue, parents before children (siblings by name), usable or not; empty when no plugin divides
    shares (then there are no queue numbers to show)."""
    session = ins.shown
    if not session.queue_share_fns:
        return []
    unusable = _unusable(ins, pending)
    counts = _counts(ins, pending)
    rows: list[dict[str, Any]] = []
    walked = list(_walk(ins, unusable, _tops(ins, unusable), 0, set()))
    seen = {uid for uid, _ in walked}
    walked += _walk(ins, unusable, sorted(set(unusable) - seen), 0, seen)  # a loop of parents: at the top
    for uid, depth in walked:
        subtree = [q for q, _ in _walk(ins, unusable, [uid], 0, set())]
        row: dict[str, Any] = {"queue": uid, "parent": _parent_of(ins, unusable, uid), "depth": depth}
        row.update({name: sum(counts.get(q, {}).get(name, 0) for q in subtree) for name in _COUNTS})
        since = [counts[q]["since"] for q in subtree if counts.get(q, {}).get("since") is not None]
        row["since"] = min(since) if since else None
        row["inLine"] = sum(len(ins.order.by_queue.get(q, ())) for q in subtree)
        if uid in session.queues:
            row["numbers"] = _numbers(ins, uid)
            row["priority"] = session.queues[uid].priority
        else:
            row["problem"] = unusable[uid][1]
        rows.append(row)
    _borrowing(rows)
    return [_queue_view(ins, row) for row in rows]


def subtree(queues: list[QueueView], queue: str) -> frozenset[str]:
    """The queue and its descendants; ``NoQueues`` naming the nearest queue when there is none of that name."""
    known = [row.queue for row in queues]
    if queue not in known:
        close = difflib.get_close_matches(queue, known, n=1)
        hint = f"; did you mean {close[0]}?" if close else f"; its queues: {', '.join(known) or 'none'}"
        raise NoQueues(f"no queue {queue}{hint}")
    found = {queue}
    for row in queues:  # parents come before children
        if row.parent in found:
            found.add(row.queue)
    return frozenset(found)


_COUNTS = ("running", "runningPods", "pending", "pendingPods")


def _counts(ins: Inspection, pending: list[PendingView]) -> dict[str, dict[str, Any]]:
    """Per queue (its own podgroups only): podgroups and pods running and waiting, and the oldest wait."""
    counts: dict[str, dict[str, Any]] = {}
    session = ins.shown
    for job in (*session.jobs.values(), *session.cluster.unschedulable_jobs.values()):
        placed = sum(1 for task in job.tasks.values() if task.status in ACTIVE_USED)
        if placed:
            entry = counts.setdefault(job.queue, {})
            entry["running"] = entry.get("running", 0) + 1
            entry["runningPods"] = entry.get("runningPods", 0) + placed
    for row in pending:
        entry = counts.setdefault(row.queue, {})
        entry["pending"] = entry.get("pending", 0) + 1
        entry["pendingPods"] = entry.get("pendingPods", 0) + row.pods
        if row.waiting_since is not None and (entry.get("since") is None or row.waiting_since < entry["since"]):
            entry["since"] = row.waiting_since
    return counts


def _unusable(ins: Inspection, pending: list[PendingView]) -> dict[str, tuple[str, str]]:
    """Queues kai cannot use, by name: (their parent as written, why). Queues that do not exist but are named by a
    waiting podgroup are among them, with the existing queue they are most like."""
    found: dict[str, tuple[str, str]] = {}
    state, known = ins.state, ins.shown.queues
    for (kind, name), error in state.invalid.items():
        if kind == "Queue":
            found[name] = (_written_parent(ins, name), f"field {error.field}: {error.problem}")
    for name, error in state.unusable_queues.items():
        found.setdefault(name, (_written_parent(ins, name), error.problem))
    names_known = [*known, *found]
    for row in pending:
        if row.queue in known or row.queue in found:
            continue
        close = difflib.get_close_matches(row.queue, names_known, n=1)
        found[row.queue] = ("", "does not exist" + (f"; did you mean {close[0]}?" if close else ""))
    return found


def _written_parent(ins: Inspection, name: str) -> str:
    queue = ins.cluster.get("Queue", name) or {}
    parent = (queue.get("spec") or {}).get("parentQueue") if isinstance(queue.get("spec"), dict) else None
    return parent if isinstance(parent, str) else ""


def _numbers(ins: Inspection, uid: str) -> dict[str, dict[str, Any]]:
    info = ins.shown.queues[uid]
    divided = ins.shown.queue_share_fns[0](uid)
    usage_on = ins.scenario.config.usage_db is not None
    numbers = {}
    for resource, (_, scale) in RESOURCES.items():
        spec = getattr(info.queue, resource)
        numbers[resource] = {
            "quota": amount(spec.quota, scale),
            "limit": amount(spec.limit, scale),
            "weight": spec.over_quota_weight,
            "deserved": amount(divided["deserved"][resource], scale),
            "fair_share": amount(divided["fairShare"][resource], scale),
            "allocated": amount(divided["allocated"][resource], scale),
            "requested": amount(divided["request"][resource], scale),
            "usage": round(divided["usage"][resource], 3) if usage_on else None,
        }
    return numbers


def _queue_view(ins: Inspection, row: dict[str, Any]) -> QueueView:
    uid = row["queue"]
    peers = ins.order.siblings.get(row["parent"], ())
    resources = {
        name: Amounts(
            **{key: value for key, value in numbers.items() if key not in ("borrows", "lends", "unassigned")},
            borrows=tuple(numbers["borrows"]),
            lends=tuple(numbers["lends"]),
            unassigned=numbers["unassigned"],
        )
        for name, numbers in row.get("numbers", {}).items()
    }
    return QueueView(
        queue=uid,
        parent=row["parent"],
        depth=row["depth"],
        priority=row.get("priority", 0),
        order=Place(peers.index(uid) + 1, len(peers)) if uid in peers else None,
        in_line=row["inLine"],
        running=row["running"],
        running_pods=row["runningPods"],
        pending=row["pending"],
        pending_pods=row["pendingPods"],
        oldest_pending=row["since"],
        resources=resources,
        problem=row.get("problem", ""),
    )


def _parent_of(ins: Inspection, unusable: dict[str, tuple[str, str]], uid: str) -> str:
    queues = ins.shown.queues
    parent = queues[uid].parent if uid in queues else unusable[uid][0]
    return parent if parent in queues or parent in unusable else ""


def _tops(ins: Inspection, unusable: dict[str, tuple[str, str]]) -> list[str]:
    return sorted(uid for uid in (*ins.shown.queues, *unusable) if not _parent_of(ins, unusable, uid))


def _walk(
    ins: Inspection, unusable: dict[str, tuple[str, str]], uids: list[str], depth: int, seen: set[str]
) -> Iterator[tuple[str, int]]:
    """Depth first, children by name; ``seen`` keeps a loop of unusable queues' parents from going round."""
    queues = ins.shown.queues
    for uid in uids:
        if uid in seen and depth:
            continue
        seen.add(uid)
        yield uid, depth
        children = [*(queues[uid].children if uid in queues else ())]
        children += [name for name, (parent, _) in unusable.items() if parent == uid]
        yield from _walk(ins, unusable, sorted(children), depth + 1, seen)


def _borrowing(rows: list[dict[str, Any]]) -> None:
    """Per sibling group and resource: who borrows how much from whom (see the module docstring)."""
    groups: dict[str, list[dict[str, Any]]] = {}
    for row in rows:
        if "numbers" not in row:
            continue
        groups.setdefault(row["parent"], []).append(row)
        for numbers in row["numbers"].values():
            numbers.update(borrows=[], lends=[], unassigned=0.0)
    for siblings in groups.values():
        for resource in RESOURCES:
            over, idle = {}, {}
            for row in siblings:
                numbers = row["numbers"][resource]
                if numbers["deserved"] == names.UNLIMITED:
                    continue
                over[row["queue"]] = max(0.0, numbers["allocated"] - numbers["deserved"])
                idle[row["queue"]] = max(0.0, numbers["deserved"] - numbers["allocated"])
            total_over, total_idle = sum(over.values()), sum(idle.values())
            if not total_over:
                continue
            covered = min(total_over, total_idle)
            by_queue = {row["queue"]: row["numbers"][resource] for row in siblings}
            for borrower, owed in over.items():
                if not owed:
                    continue
                taken = 0.0
                for lender, spare in idle.items():
                    part = amount(covered * owed / total_over * spare / total_idle) if total_idle else 0.0
                    if part <= 0:
                        continue
                    taken += part
                    by_queue[borrower]["borrows"].append((lender, part))
                    by_queue[lender]["lends"].append((borrower, part))
                by_queue[borrower]["unassigned"] = amount(max(0.0, owed - taken))

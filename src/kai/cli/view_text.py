"""The view (``kai.components.insight.view``) as text: a summary line, the problems, the pods, the queue tree and the
waiting podgroups, in tables that fit the console's width. ``kai simulate``, ``kai queues`` and ``kai explain``
print these, so the same numbers read the same everywhere. Long lists are folded with counts unless ``wide``."""

from collections import Counter
from collections.abc import Iterable

from rich.console import RenderableType
from rich.table import Table
from rich.text import Text

from kai.components.insight.view import (
    WAITING_STATUSES,
    Amounts,
    PendingView,
    PodView,
    QueueView,
    View,
)
from kai.components.sim.problems import ERROR, Problem
from kai.components.sim.tables import plain_table
from kai.core.model.duration import format_duration
from kai.core.model.meta import format_time, untimed
from kai.core.model.text import go_float
from kai.core.state.reason_text import describe, when
from kai.core.state.reasons import Reason

FOLD_AT = 30
"""Rows a list shows before it folds the rest into counts (``-o wide`` shows them all)."""


def n(value: float) -> str:
    return "∞" if value == -1 else go_float(value)


def age(since: float | None, now: float) -> str:
    """How long ago ``since`` was ("-" when not known)."""
    return "-" if since is None else format_duration(max(0.0, round(now - since)))


def why(reason: Reason | None, now: float) -> str:
    return f"{reason.kind.value}: {describe(reason, now)}" if reason is not None else ""


def _plural(count: int, word: str) -> str:
    return f"{count:,} {word}{'' if count == 1 else 's'}"


def summary_line(view: View) -> str:
    """Pods placed and waiting, and why they wait: the first thing to read."""
    summary = view.summary
    parts = [f"{_plural(summary.pods, 'pod')}: {summary.placed:,} placed, {summary.waiting:,} waiting"]
    if summary.by_reason:
        parts[0] += " (" + ", ".join(f"{count:,} {kind}" for kind, count in summary.by_reason) + ")"
    if summary.finished:
        parts.append(f"{summary.finished:,} finished")
    if summary.other_schedulers:
        parts.append(f"{_plural(summary.other_schedulers, 'pod')} of other schedulers")
    if summary.errors or summary.warnings:
        parts.append(f"{_plural(summary.errors, 'error')}, {_plural(summary.warnings, 'warning')} in the input")
    filters = ", ".join(f"{key} {value}" for key, value in view.filters.items())
    return (f"Only {filters}: " if filters else "") + " · ".join(parts)


def problems_table(problems: Iterable[Problem]) -> Table | None:
    problems = list(problems)
    if not problems:
        return None
    table = plain_table("", "object", "field", "problem", title="Problems (errors: skipped; warnings: used as said)")
    for problem in problems:
        style = "red" if problem.severity == ERROR else "yellow"
        name = f"{problem.kind} {problem.name}".strip()
        table.add_row(Text(problem.severity, style=style), name, problem.field, problem.problem)
    return table


def pods_section(view: View, wide: bool) -> list[RenderableType]:
    """Every pod when there are few (or ``wide``); else one row per podgroup, the waiting first, folded after
    ``FOLD_AT`` rows with what the rest hold."""
    if wide or len(view.pods) <= FOLD_AT:
        return [_pods_table(view.pods, view.at, wide)]
    return _podgroups_table(view)


def _pods_table(pods: Iterable[PodView], now: float, wide: bool) -> Table:
    """A pod that waits for a reason told above for a pod of its podgroup says so, instead of the same paragraph
    again."""
    columns = ["pod", *(["podgroup"] if wide else []), "queue", "status (for)", "node", "GPUs", "why it waits"]
    table = plain_table(*columns, title="Pods", keep=len(columns) - 1)
    told: dict[str, list[Reason]] = {}  # reasons are compared, not hashed: their evidence is a mapping
    for pod in pods:
        status = f"{pod.status} {age(pod.waiting_since, now)}" if pod.status in WAITING_STATUSES else pod.status
        cells = [pod.pod, *([pod.podgroup] if wide else []), pod.queue, status, pod.node or "-", n(pod.gpus)]
        same = pod.reason is not None and pod.reason in told.get(pod.podgroup, ())
        table.add_row(*cells, "〃 as above" if same else why(pod.reason, now))
        if pod.reason is not None and not same:
            told.setdefault(pod.podgroup, []).append(pod.reason)
    return table


def _podgroups_table(view: View) -> list[RenderableType]:
    by_group: dict[str, list[PodView]] = {}
    for pod in view.pods:
        by_group.setdefault(pod.podgroup, []).append(pod)
    waiting = [row.podgroup for row in view.pending if row.podgroup in by_group]
    order = waiting + sorted(set(by_group) - set(waiting))
    columns = ("podgroup", "queue", "pods", "nodes", "GPUs", "waiting", "why it waits")
    table = plain_table(*columns, title="Pods by podgroup", keep=2)
    since = {row.podgroup: row.waiting_since for row in view.pending}
    workloads = {row.podgroup: row.workload for row in view.pending if row.workload}
    for key in order[:FOLD_AT]:
        pods = by_group[key]
        statuses = Counter(pod.status for pod in pods)
        nodes = sorted({pod.node for pod in pods if pod.node})
        waiting_pod = next((pod for pod in pods if pod.status in WAITING_STATUSES), None)
        workload = workloads.get(key)
        table.add_row(
            key + (f"\n({workload.replace('/', ' ')})" if workload else ""),
            pods[0].queue,
            ", ".join(f"{count} {status}" for status, count in sorted(statuses.items())),
            ", ".join(nodes) if len(nodes) <= 2 else f"{len(nodes)} nodes",
            n(sum(pod.gpus for pod in pods)),
            age(since.get(key), view.at) if key in since else "",
            why(waiting_pod.reason if waiting_pod is not None else None, view.at),
        )
    rest = order[FOLD_AT:]
    if not rest:
        return [table]
    statuses = Counter(pod.status for key in rest for pod in by_group[key])
    held = ", ".join(f"{count:,} {status}" for status, count in statuses.most_common())
    fold = (
        f"… and {_plural(len(rest), 'more podgroup')} ({held}): narrow with --queue, --namespace or --pending, "
        "or see every row with -o wide"
    )
    return [table, Text(fold, style="dim")]


def queues_table(view: View, resource: str, wide: bool) -> list[RenderableType]:
    """The queue tree with each queue's numbers for ``resource`` (quota to recent usage), podgroups running and
    waiting and the oldest wait; ``wide`` adds priority, order, in line and borrowing. Queues kai cannot use are
    marked, with why beneath."""
    rows = view.queues
    if not rows:
        return [Text("no queues to show")]
    title = (
        f"Queues ({_UNITS[resource]}) — run / wait: podgroups running / waiting; oldest: the longest wait; "
        "usage: recent, as time-based fair share counts it"
    )
    columns = ["queue", "quota", "limit", "weight", "deserved", "fair\nshare", "allocated", "requested"]
    columns += ["run", "wait", "oldest", "usage"]
    if wide:
        columns += ["priority", "order", "in\nline", "borrowing"]
    table = plain_table(*columns, title=title, keep=len(columns) - (1 if wide else 0))
    for column in table.columns[1:]:
        column.justify = "right"
    if wide:
        table.columns[-1].justify = "left"
    notes = []
    for index, row in enumerate(rows):
        name = _indent(rows, index) + row.queue
        counts = [str(row.running), str(row.pending), age(row.oldest_pending, view.at)]
        if row.problem:
            notes.append(Text(f"✗ {row.queue}: kai cannot use it: {row.problem}", style="red"))
            name = _indent(rows, index) + "✗ " + row.queue
            cells: list[str | Text] = [Text(name, style="red"), *(["-"] * 7), *counts, "-"]
            table.add_row(*cells, *(["-", "-", str(row.in_line), ""] if wide else []))
            continue
        amounts = row.resources[resource]
        usage = "off" if amounts.usage is None else f"{amounts.usage:.0%}"
        cells = [name, n(amounts.quota), n(amounts.limit), go_float(amounts.weight), n(amounts.deserved)]
        cells += [n(amounts.fair_share), n(amounts.allocated), n(amounts.requested), *counts, usage]
        if wide:
            order = f"{row.order.place}/{row.order.of}" if row.order else "-"
            cells += [str(row.priority), order, str(row.in_line), _borrowing(amounts)]
        table.add_row(*cells)
    return [table, *notes]


_UNITS = {"gpu": "GPUs", "cpu": "cores", "memory": "GB"}


def _indent(rows: tuple[QueueView, ...], index: int) -> str:
    row = rows[index]
    if not row.depth:
        return ""
    last = all(other.depth <= row.depth - 1 or other.parent != row.parent for other in rows[index + 1 :])
    return "  " * (row.depth - 1) + ("└ " if last else "├ ")


def _borrowing(amounts: Amounts) -> str:
    parts = [f"borrows {n(amount)} from {lender}" for lender, amount in amounts.borrows]
    if amounts.unassigned:
        parts.append(f"borrows {n(amounts.unassigned)} unassigned")
    parts += [f"lends {n(amount)} to {borrower}" for borrower, amount in amounts.lends]
    return "; ".join(parts)


def pending_table(view: View, wide: bool) -> list[RenderableType]:
    """The waiting podgroups in the order the next cycle tries them: their place in their queue (``wide``: among
    siblings and in the cluster too), since when they wait, why, the cheapest proven fix (when the search ran) or
    what they need that no change kai tries gives, and an estimated start."""
    rows = view.pending
    where = f" in {view.filters['queue']}" if "queue" in view.filters else ""
    title = f"Pending{where}: {len(rows)} podgroups waiting, in the order the next cycle tries them"
    columns = ["#", "podgroup", "queue", "pods", "GPUs", "waiting", "why", "fix", "start"]
    if wide:
        columns[1:1] = ["in cluster"]
    table = plain_table(*columns, title=title, keep=0)
    shown = rows if wide else rows[:FOLD_AT]
    for row in shown:
        position = row.position
        place = str(position.in_queue.place) if position.in_queue else "-"
        cells = [place]
        if wide:
            cells.append(f"{position.cluster.place}/{position.cluster.of}" if position.cluster else "-")
        cells += [_podgroup_cell(row, wide), row.queue, str(row.pods), n(row.gpus), age(row.waiting_since, view.at)]
        cells += [why(row.reason, view.at), row.fix_text(view.at), _start(row, view.at)]
        table.add_row(*cells)
    if len(shown) < len(rows):
        more = f"… and {_plural(len(rows) - len(shown), 'more waiting podgroup')}: see them all with -o wide"
        return [table, Text(more, style="dim")]
    return [table]


def fixes_section(view: View, wide: bool) -> list[RenderableType]:
    """What starts each waiting podgroup, in the words of ``pending_table``'s fix column, in line order: the
    cheapest proven fix, or what it needs; the rows the fix budget did not reach are counted, not listed."""
    told = [(row, row.fix_text(view.at)) for row in view.pending if not (row.fixes is not None and row.fixes.unreached)]
    told = [(row, text) for row, text in told if text]
    unreached = sum(1 for row in view.pending if row.fixes is not None and row.fixes.unreached)
    if not told and not unreached:
        return []
    title = "What would start them: a fix proven by a what-if run of this input, or what it needs (kai explain: more)"
    table = plain_table("podgroup", "fix", title=title, keep=0)
    shown = told if wide else told[:FOLD_AT]
    for row, text in shown:
        table.add_row(_podgroup_cell(row, wide), text)
    parts: list[RenderableType] = [table]
    if len(shown) < len(told):
        parts.append(Text(f"… and {_plural(len(told) - len(shown), 'more')}: see them all with -o wide", style="dim"))
    if unreached:
        more = f"{_plural(unreached, 'waiting podgroup')} not searched: the --fix-budget ran out before them"
        parts.append(Text(more, style="dim"))
    return parts


def _podgroup_cell(row: PendingView, wide: bool) -> str:
    """The workload it is of, as its owner knows it (the podgroup's own name too with ``wide``)."""
    if row.workload is None:
        return row.podgroup
    workload = f"{row.workload.replace('/', ' ')} ({row.namespace})"
    return f"{row.podgroup}\n{workload}" if wide else workload


def _start(row: PendingView, now: float) -> str:
    at, _ = row.estimated_start
    if at is not None:
        return when(at, now)
    return "after evictions" if row.state == "pipelined" else "-"


def header(view: View) -> Text:
    """What is shown: the source, the moment, the time (when the input has a clock) and the scheduler config."""
    at = f", at {format_time(view.at)}" if not untimed(view.at) else ""
    if view.at and untimed(view.at):
        at = f", {format_duration(view.at)} into the run (the input gives no times)"
    return Text.assemble((f"{view.source} — {view.moment}{at}", "bold"), f"; scheduler config: {view.config}")

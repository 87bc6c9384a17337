"""The side-by-side report of a what-if run in the terminal: what it assumes, the changes, whether they changed
anything, totals, per-queue figures and the GPUs each queue holds over time, base beside changed. The plots' page
and ``--json`` say the same (``assumptions``, ``verdict``)."""

import statistics
from collections.abc import Callable
from typing import Any

from rich.console import Console

from kai.components.sim.lifecycle import LONG_RUNNING_KINDS
from kai.components.sim.report import sampled
from kai.components.sim.tables import plain_table
from kai.components.sim.timeline import QueueSample
from kai.components.sim.whatif.compare import Assumptions, Comparison, RunMetrics, wait_stats
from kai.core.model.duration import format_duration
from kai.core.model.meta import format_time, untimed
from kai.core.model.text import humanize

ARROW = " → "
SERVICES = ", ".join(sorted({*LONG_RUNNING_KINDS, "RayCluster"} - {"ReplicaSet"}))


def assumptions(given: Assumptions) -> list[str]:
    """What the run takes for granted, one line each: the inputs, the horizon and period, the run times."""
    run_time = given.default_run_time_s
    batch = (
        f"batch pods without a run time run {format_duration(run_time)}"
        if run_time is not None
        else "pods without a run time run until evicted"
    )
    return [
        f"input: {', '.join(given.inputs) or '-'}",
        f"horizon: {format_duration(given.horizon_s)} from {_start(given.start)}, one cycle every "
        f"{format_duration(given.period_s)} ({given.cycles} cycles)",
        f"run times: {batch}; pods of {SERVICES} or restartPolicy Always run to the horizon "
        "(a simulate.kai.scheduler/run-time annotation overrides both)",
    ]


def _start(start: float) -> str:
    return "the start (the input gives no times)" if untimed(start) else format_time(start)


def verdict(comparison: Comparison) -> str:
    """One line: whether the changes changed what ran."""
    if not comparison.changes:
        return "no changes: both runs are the same input"
    if comparison.identical:
        return (
            f"identical: the changes made no difference in {format_duration(comparison.assumptions.horizon_s)} "
            "(the same pods started at the same times, the same evictions, the same GPUs per queue at every cycle)"
        )
    return "the runs differ: see below"


def totals(comparison: Comparison) -> list[tuple[str, ...]]:
    """(figure, base, changed) for the whole cluster; the plots' page shows the same rows."""
    base, changed = comparison.base, comparison.changed

    def both(figure: str, fn: Callable[[RunMetrics], str]) -> tuple[str, ...]:
        return figure, fn(base), fn(changed)

    rows = [
        both("pods started", lambda r: str(len(r.started))),
        both("pods pending at the end", lambda r: str(sum(r.pending.values()))),
        both("pods finished their run time", lambda r: str(r.completed)),
        *([both("pods failed", lambda r: str(r.failed))] if base.failed or changed.failed else []),
        both("time to start p50 / max", lambda r: _waits([w for ws in r.waits.values() for w in ws])),
        both("GPU utilisation mean / peak", _utilisation),
        both("GPUs in the cluster", lambda r: humanize(r.capacity[-1]) if r.capacity else "0"),
    ]
    actions = sorted(set(base.evictions) | set(changed.evictions))
    rows.append(both("evictions", lambda r: str(sum(r.evictions.values()))))
    for action in actions:
        rows.append((f"  by {action}", str(base.evictions[action]), str(changed.evictions[action])))
    return rows


def _waits(waits: list[float]) -> str:
    stats = wait_stats(waits)
    return "-" if stats is None else f"{format_duration(stats[0])} / {format_duration(stats[1])}"


def _utilisation(run: RunMetrics) -> str:
    values = run.utilisation()
    return f"{statistics.fmean(values):.0%} / {max(values):.0%}" if values else "-"


def queue_rows(comparison: Comparison) -> list[tuple[str, ...]]:
    """Per leaf queue: pods started, time to start, mean GPUs allocated and mean fair share, base → changed."""
    rows = []
    base, changed = comparison.base, comparison.changed
    for queue in comparison.queues():
        cells = [
            f"{len(base.waits.get(queue, []))}{ARROW}{len(changed.waits.get(queue, []))}",
            f"{_waits(base.waits.get(queue, []))}{ARROW}{_waits(changed.waits.get(queue, []))}",
            f"{base.pending[queue]}{ARROW}{changed.pending[queue]}",
        ]
        for key in ("allocated", "fair_share"):
            cells.append(f"{base.mean_queue(queue, key):.2f}{ARROW}{changed.mean_queue(queue, key):.2f}")
        rows.append((queue, *cells))
    return rows


def print_comparison(comparison: Comparison, console: Console, sample_every_s: float | None = None) -> None:
    console.print("[bold]What if[/bold]: the input as it is (base) and changed, side by side")
    for line in assumptions(comparison.assumptions):
        console.print(f"  {line}")
    console.print("Changes: " + ("; ".join(comparison.changes) or "none"))
    console.print(f"[bold]Result[/bold]: {verdict(comparison)}")
    summary = plain_table("", "base", "changed", title="Cluster", keep=3)
    for figure in totals(comparison):
        summary.add_row(*figure)
    console.print(summary)
    queues = plain_table(
        "queue",
        "pods started",
        "time to start p50 / max",
        "pending at end",
        "mean GPUs allocated",
        "mean GPU fair share",
        title=f"Queues (base{ARROW}changed)",
        keep=2,
    )
    for row in queue_rows(comparison):
        queues.add_row(*row)
    console.print(queues)
    _print_timeline(comparison, console, sample_every_s)


def _print_timeline(comparison: Comparison, console: Console, sample_every_s: float | None) -> None:
    base, changed = comparison.base, comparison.changed
    queues = comparison.queues()
    title = f"GPUs over time, after each cycle: allocated / fair share (base{ARROW}changed)"
    table = plain_table("time", *queues, title=title)
    rows = sampled(base.timeline, comparison.period_s, sample_every_s)
    by_cycle = {sample.cycle: sample for sample in changed.timeline}
    for sample in rows:
        other = by_cycle.get(sample.cycle)
        cells = []
        for queue in queues:
            left = sample.queues.get(queue)
            right = other.queues.get(queue) if other is not None else None
            cells.append(f"{_cell(left)}{ARROW}{_cell(right)}")
        table.add_row(f"+{format_duration(sample.elapsed_s)}", *cells)
    console.print(table)


def _cell(queue: QueueSample | None) -> str:
    return "-" if queue is None else f"{humanize(queue.allocated['gpu'])} / {humanize(queue.fair_share['gpu'])}"


def as_json(comparison: Comparison) -> dict[str, Any]:
    """The report's figures for programs (``--json``): per run, the cluster's and each queue's."""

    def run_json(run: RunMetrics) -> dict[str, Any]:
        utilisation = run.utilisation()
        queues = {}
        for queue in comparison.queues():
            stats = wait_stats(run.waits.get(queue, []))
            queues[queue] = {
                "podsStarted": len(run.waits.get(queue, [])),
                "pendingAtEnd": run.pending[queue],
                "timeToStartP50Seconds": stats[0] if stats else None,
                "timeToStartMaxSeconds": stats[1] if stats else None,
                "meanAllocatedGPUs": run.mean_queue(queue, "allocated"),
                "meanFairShareGPUs": run.mean_queue(queue, "fair_share"),
            }
        return {
            "podsStarted": len(run.started),
            "pendingAtEnd": sum(run.pending.values()),
            "completedPods": run.completed,
            "failedPods": run.failed,
            "evictions": dict(run.evictions),
            "gpuUtilisationMean": statistics.fmean(utilisation) if utilisation else 0.0,
            "clusterGPUs": run.capacity[-1] if run.capacity else 0.0,
            "queues": queues,
        }

    return {
        "inputs": list(comparison.assumptions.inputs),
        "assumptions": assumptions(comparison.assumptions),
        "identical": comparison.identical,
        "verdict": verdict(comparison),
        "changes": comparison.changes,
        "cycles": comparison.cycles,
        "periodSeconds": comparison.period_s,
        "defaultRunTimeSeconds": comparison.default_run_time_s,
        "base": run_json(comparison.base),
        "changed": run_json(comparison.changed),
    }

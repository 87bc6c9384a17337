"""Rendering a simulation for people (tables) and for programs (JSON)."""

import math
from dataclasses import asdict
from typing import Any

from rich.console import Console
from rich.table import Table

from kai.components.sim.problems import ERROR
from kai.components.sim.runner import ScenarioRun
from kai.components.sim.timeline import TimelineSample
from kai.core.model.duration import format_duration
from kai.core.model.meta import format_time
from kai.core.model.text import BYTES_PER_GB, MILLI_CPU_PER_CORE, humanize

TIMELINE_ROWS = 24
"""Rows of the timeline table when the run does not say how often to sample."""


def as_json(run: ScenarioRun) -> dict[str, Any]:
    document: dict[str, Any] = {
        "scenario": str(run.scenario.path),
        "name": run.scenario.name,
        "passed": run.passed if run.scenario.expect else None,
        "mismatches": run.mismatches,
        "problems": [asdict(problem) for problem in run.problems],
        "cycles": [
            {
                "cycle": record.number,
                "pods": record.outcome.pods,
                "podGroups": record.outcome.podgroups,
                "nodes": record.outcome.nodes,
                "counts": record.outcome.counts,
                "skipped": record.session.result.skipped,
            }
            for record in run.cycles
        ],
    }
    if run.clock is not None and run.clock.running:
        document["clock"] = {"start": format_time(run.clock.start), "periodSeconds": run.clock.period_s}
        document["completedPods"] = run.completed
        document["failedPods"] = run.failed
        document["timeline"] = [_sample_json(sample) for sample in run.timeline]
    return document


def _sample_json(sample: TimelineSample) -> dict[str, Any]:
    return {
        "cycle": sample.cycle,
        "time": format_time(sample.time),
        "elapsedSeconds": sample.elapsed_s,
        "binds": sample.binds,
        "evictions": sample.evictions,
        "queues": {
            uid: {"allocated": queue.allocated, "fairShare": queue.fair_share, "usage": queue.usage}
            for uid, queue in sample.queues.items()
        },
    }


def timeline_rows(run: ScenarioRun) -> list[TimelineSample]:
    """The samples the table shows: one per ``sampleEvery`` of simulated time (about 24 by default), and the last."""
    if run.clock is None or not run.clock.running:
        return []
    return sampled(run.timeline, run.clock.period_s, run.scenario.clock.sample_every_s)


def sampled(timeline: list[TimelineSample], period_s: float, every_s: float | None) -> list[TimelineSample]:
    """One sample per ``every_s`` of simulated time (None: about 24 in all), and the last."""
    if not timeline or period_s <= 0:
        return []
    every = every_s or max(period_s, timeline[-1].elapsed_s / TIMELINE_ROWS)
    step = max(1, math.ceil(every / period_s - 1e-9))
    rows = timeline[::step]
    return rows if rows[-1] is timeline[-1] else [*rows, timeline[-1]]


def print_timeline(run: ScenarioRun, console: Console) -> None:
    """Each leaf queue's GPUs over simulated time: allocated, fair share and (with time-based fair share) usage."""
    rows = timeline_rows(run)
    if not rows:
        return
    leaves = rows[-1].leaves
    usage = run.scenario.config.usage_db is not None
    title = f"GPUs over time: allocated / fair share{' / usage' if usage else ''}"
    caption = f"{run.completed} pods finished their run time" + (f", {run.failed} failed" if run.failed else "")
    table = Table("time", "cycle", *leaves, title=title, caption=caption, min_width=len(title) + 4)
    for sample in rows:
        cells = []
        for uid in leaves:
            queue = sample.queues.get(uid)
            if queue is None:
                cells.append("-")
                continue
            cell = f"{humanize(queue.allocated['gpu'])} / {humanize(queue.fair_share['gpu'])}"
            cells.append(f"{cell} / {queue.usage['gpu']:.2f}" if usage else cell)
        table.add_row(f"+{format_duration(sample.elapsed_s)}", str(sample.cycle), *cells)
    console.print(table)


def print_tables(run: ScenarioRun, console: Console) -> None:
    record = run.cycles[-1]
    session, outcome = record.session, record.outcome
    result = session.result
    console.print(f"[bold]{run.scenario.name}[/bold] — after cycle {record.number}")
    if run.problems:
        problems = Table("", "object", "field", "problem", title="Problems (errors: skipped; warnings: used as said)")
        for problem in run.problems:
            style = "red" if problem.severity == ERROR else "yellow"
            severity = f"[{style}]{problem.severity}[/{style}]"
            problems.add_row(severity, f"{problem.kind} {problem.name}".strip(), problem.field, problem.problem)
        console.print(problems)
    pods = Table("pod", "podgroup", "queue", "status", "node", "GPUs", "why it waits", title="Pods")
    for key, pod in sorted(outcome.pods.items()):
        group = outcome.podgroups.get(pod["podgroup"], {})
        why = result.pod_errors.get(key, "")
        unschedulable = result.unschedulable.get(pod["podgroup"])
        if not why and unschedulable is not None and pod["status"] == "Pending":
            why = unschedulable.message
        pods.add_row(
            key,
            pod["podgroup"],
            group.get("queue", ""),
            pod["status"],
            pod["node"] or "-",
            humanize(pod["requestedGPUs"]),
            why,
        )
    console.print(pods)
    usage = run.scenario.config.usage_db is not None
    queues = Table(
        "queue",
        "parent",
        "deserved GPU",
        "fair share GPU",
        "allocated GPU",
        "fair share CPU",
        "fair share mem (GB)",
        *(("usage GPU",) if usage else ()),
        title="Queues",
    )
    share_fns = session.queue_share_fns
    for uid, queue in sorted(session.queues.items()):
        if not share_fns:
            break
        shares = share_fns[0](uid)
        queues.add_row(
            uid,
            queue.parent or "-",
            humanize(shares["deserved"]["gpu"]),
            humanize(shares["fairShare"]["gpu"]),
            humanize(shares["allocated"]["gpu"]),
            humanize(shares["fairShare"]["cpu"], MILLI_CPU_PER_CORE),
            humanize(shares["fairShare"]["memory"], BYTES_PER_GB),
            *((f"{shares['usage']['gpu']:.2f}",) if usage else ()),
        )
    console.print(queues)
    print_timeline(run, console)

"""Rendering a simulation for programs (JSON), and its queues over time for people (the rest of what people see
is the view: ``kai.components.insight.view``)."""

import math
from dataclasses import asdict
from typing import Any

from rich.console import Console

from kai.components.sim.runner import ScenarioRun
from kai.components.sim.tables import plain_table
from kai.components.sim.timeline import TimelineSample
from kai.core.model.duration import format_duration
from kai.core.model.meta import format_time
from kai.core.model.text import humanize

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
    title = f"GPUs over time, after each cycle: allocated / fair share{' / usage' if usage else ''}"
    caption = f"{run.completed} pods finished their run time" + (f", {run.failed} failed" if run.failed else "")
    table = plain_table("time", "cycle", *leaves, title=title, keep=2)
    table.caption = caption
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

"""Rendering a simulation for people (tables) and for programs (JSON)."""

from dataclasses import asdict
from typing import Any

from rich.console import Console
from rich.table import Table

from kai.components.sim.problems import ERROR
from kai.components.sim.runner import ScenarioRun
from kai.core.model.text import BYTES_PER_GB, MILLI_CPU_PER_CORE, humanize


def as_json(run: ScenarioRun) -> dict[str, Any]:
    return {
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
    queues = Table(
        "queue",
        "parent",
        "deserved GPU",
        "fair share GPU",
        "allocated GPU",
        "fair share CPU",
        "fair share mem (GB)",
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
        )
    console.print(queues)

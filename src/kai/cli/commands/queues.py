"""``kai queues [QUEUE]``: the queue tree with quota, limit, weight, deserved, fair share, allocated, requested and
who borrows from whom, per resource (like Slurm's sshare); with QUEUE, its pending workloads in scheduling order
with an estimated start where one is known (like ``squeue --start``); ``--watch`` keeps it up to date."""

import json
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import click
from rich.console import Console, Group
from rich.live import Live
from rich.table import Table

from kai.cli.sources import Source, run_inspection, source_options
from kai.components.insight.inspect import Inspection
from kai.components.insight.live import LiveError, connect, read
from kai.components.insight.queues import RESOURCES, NoQueues, pending, queue_tree
from kai.core.model.duration import parse_duration
from kai.core.model.errors import InvalidObject
from kai.core.model.text import go_float
from kai.core.state.reason_text import when


@click.command()
@click.argument("queue", required=False)
@click.option("--resource", type=click.Choice([*RESOURCES, "all"]), default="gpu", show_default=True)
@click.option("--watch", is_flag=True, help="Keep refreshing (Ctrl-C to stop).")
@click.option("--interval", default="2s", show_default=True, help="Time between refreshes with --watch.")
@click.option("-o", "--output", type=click.Choice(["text", "json"]), default="text", show_default=True)
@source_options
def queues(queue: str | None, resource: str, watch: bool, interval: str, output: str, **options: Any) -> None:
    """Queues with their shares, and a queue's pending workloads in order: from a live cluster or a file (-f)."""
    source = Source.of(options)
    resources = list(RESOURCES) if resource == "all" else [resource]
    if not watch:
        inspection, _ = source.inspect()
        report = _report(inspection, queue)
        if output == "json":
            click.echo(json.dumps(report, indent=2, default=str))
        else:
            Console(width=200, highlight=False).print(_view(report, resources, inspection.now))
        return
    try:
        period = parse_duration(interval, "command line", "--interval")
    except InvalidObject as error:
        raise click.ClickException(str(error)) from error
    console = Console(highlight=False)
    with _looks(source) as look, Live(console=console, auto_refresh=False, screen=False) as live:
        try:
            while True:
                inspection = look()
                live.update(_view(_report(inspection, queue), resources, inspection.now), refresh=True)
                time.sleep(max(period, 0.2))
        except KeyboardInterrupt:
            return


@contextmanager
def _looks(source: Source) -> Iterator[Callable[[], Inspection]]:
    """Repeated looks: the file read again each time, or the live cluster's watched caches."""
    if source.files:
        yield lambda: source.inspect()[0]
        return
    side = source.scheduler_side()
    try:
        with connect(source.kubeconfig, source.context, side.config, watch=True) as cluster:
            yield lambda: run_inspection(read(cluster, side, source.label))
    except LiveError as error:
        raise click.ClickException(str(error)) from error


def _report(inspection: Inspection, queue: str | None) -> dict[str, Any]:
    try:
        report: dict[str, Any] = {"source": inspection.scenario.name, "at": inspection.now}
        report["queues"] = queue_tree(inspection)
        if queue is not None:
            report["queue"] = queue
            report["pending"] = pending(inspection, queue)
    except NoQueues as error:
        raise click.ClickException(str(error)) from error
    return report


def _view(report: dict[str, Any], resources: list[str], now: float) -> Group:
    parts: list[Any] = []
    for resource in resources:
        parts.append(_tree_table(report, resource, now))
    if "pending" in report:
        parts.append(_pending_table(report, now))
    return Group(*parts)


def _n(value: float) -> str:
    return "∞" if value == -1 else go_float(value)


def _tree_table(report: dict[str, Any], resource: str, now: float) -> Table:
    unit = RESOURCES[resource][0]
    at = f" at {when(report['at'], None)}" if report["at"] else ""
    title = f"Queues ({unit}) — {report['source']}{at}"
    table = Table(title=title, title_justify="left")
    for column in ("queue", "order", "quota", "limit", "weight", "deserved", "fair share", "allocated", "requested"):
        table.add_column(column, justify="left" if column == "queue" else "right")
    table.add_column("in line", justify="right")
    table.add_column("borrowing")
    rows = report["queues"]
    for index, row in enumerate(rows):
        numbers = row["resources"][resource]
        last = all(
            other["depth"] <= row["depth"] - 1 or other["parent"] != row["parent"] for other in rows[index + 1 :]
        )
        indent = "" if not row["depth"] else "  " * (row["depth"] - 1) + ("└ " if last else "├ ")
        order = f"{row['order']['place']}/{row['order']['of']}" if row["order"] else "-"
        table.add_row(
            indent + row["queue"],
            order,
            _n(numbers["quota"]),
            _n(numbers["limit"]),
            go_float(numbers["weight"]),
            _n(numbers["deserved"]),
            _n(numbers["fairShare"]),
            _n(numbers["allocated"]),
            _n(numbers["requested"]),
            str(row["pendingInLine"]),
            _borrowing(numbers),
        )
    return table


def _borrowing(numbers: dict[str, Any]) -> str:
    parts = [f"borrows {_n(b['amount'])} from {b['from']}" for b in numbers["borrows"]]
    if numbers["unassigned"]:
        parts.append(f"borrows {_n(numbers['unassigned'])} unassigned")
    parts += [f"lends {_n(lent['amount'])} to {lent['to']}" for lent in numbers["lends"]]
    return "; ".join(parts)


def _pending_table(report: dict[str, Any], now: float) -> Table:
    table = Table(title=f"Pending in {report['queue']} (in the order the next cycle tries them)", title_justify="left")
    for column in ("#", "podgroup", "queue", "pods", "GPUs", "state", "why", "needs", "estimated start"):
        table.add_column(column)
    for row in report["pending"]:
        start = row["estimatedStart"]
        at = (
            when(start["at"], now)
            if start["at"] is not None
            else ("after evictions" if row["state"] == "pipelined" else "-")
        )
        table.add_row(
            str(row["place"]) if row["place"] else "-",
            row["podgroup"] + (f"\n({row['workload'].replace('/', ' ')})" if row["workload"] else ""),
            row["queue"],
            str(row["pods"]),
            go_float(row["gpus"]),
            row["state"],
            f"{row['reason']['kind']}: {row['reason']['text']}" if row["reason"] else "",
            row["needs"]["text"] if row["needs"] else "",
            at,
        )
    return table

"""``kai queues [QUEUE]``: the queue tree with quota, limit, weight, deserved, fair share, allocated, requested,
podgroups running and waiting, the oldest wait and recent usage per resource (as Slurm's ``sshare`` and
``kueuectl list clusterqueue`` show them); with QUEUE (or ``--pending``), the waiting workloads in scheduling order
with their place, reason, the cheapest fix proven for each within the fix budget (or what it needs) and estimated
start (as ``squeue --start``); ``--watch`` keeps it up to date (without the fix search: a refresh would wait for it).
The numbers are the one view's (``kai.components.insight.view``): ``kai simulate`` and ``kai explain`` show the same.
"""

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import click
from rich.console import Group, RenderableType
from rich.live import Live

from kai.cli.console import console, emit, output_option, width_option
from kai.cli.fix_search import fix_options, fix_search
from kai.cli.sources import Source, run_inspection, source_options
from kai.cli.view_text import header, pending_table, problems_table, queues_table, summary_line
from kai.components.insight.build import build_view, with_fixes
from kai.components.insight.inspect import Inspection, Moment
from kai.components.insight.live import LiveError, connect, read
from kai.components.insight.queues import NoQueues, subtree
from kai.components.insight.view import RESOURCES, View, view_json
from kai.core.model.duration import parse_duration
from kai.core.model.errors import InvalidObject


@click.command()
@click.argument("queue", required=False)
@click.option("--resource", type=click.Choice([*RESOURCES, "all"]), default="gpu", show_default=True)
@click.option("--namespace", "only_namespace", help="Only waiting podgroups of this namespace.")
@click.option("--pending", is_flag=True, help="List the waiting podgroups (of QUEUE, or of every queue).")
@click.option("--watch", is_flag=True, help="Keep refreshing (Ctrl-C to stop).")
@click.option("--interval", default="2s", show_default=True, help="Time between refreshes with --watch.")
@output_option("wide", "json", "yaml")
@width_option
@fix_options
@source_options
def queues(
    queue: str | None,
    resource: str,
    only_namespace: str | None,
    pending: bool,
    watch: bool,
    interval: str,
    output: str,
    width: int | None,
    fix_budget: float,
    fix_candidates: int,
    **options: Any,
) -> None:
    """Queues with their shares, and a queue's waiting workloads in order: from a live cluster (as it is, one dry
    cycle telling why they wait) or a file (-f, after its cycles, as kai simulate shows it).

    The waiting workloads (QUEUE or --pending) each get the cheapest fix a what-if run of the changed input proves,
    first in line first, until --fix-budget runs out (kai explain shows every fix found and what was tried)."""
    source = Source.of(options)
    resources = list(RESOURCES) if resource == "all" else [resource]
    wide = output == "wide"
    waiting = queue is not None or pending

    def look(ins: Inspection, search: bool = False) -> View:
        view = build_view(ins, source.config_of(ins))
        if not view.queues:
            raise click.ClickException("the scheduler config runs no proportion plugin: there are no queue shares")
        try:
            queues = subtree(list(view.queues), queue) if queue is not None else None
        except NoQueues as error:
            raise click.ClickException(f"{error} in {view.source}") from error
        view = view.only(queues, only_namespace, whole_tree=True)
        return with_fixes(view, fix_search(ins, fix_budget, fix_candidates, listing=True) if search else None)

    if not watch:
        view = look(source.inspect()[0], search=waiting)
        if output in ("json", "yaml"):
            emit(view_json(view), output)
        else:
            console(width, wide).print(_rendered(view, resources, wide, waiting))
        return
    try:
        period = parse_duration(interval, "command line", "--interval")
    except InvalidObject as error:
        raise click.ClickException(str(error)) from error
    out = console(width, wide)
    with _looks(source) as inspect, Live(console=out, auto_refresh=False, screen=False) as live:
        try:
            while True:
                view = look(inspect())
                live.update(_rendered(view, resources, wide, waiting), refresh=True)
                time.sleep(max(period, 0.2))
        except KeyboardInterrupt:
            return


def _rendered(view: View, resources: list[str], wide: bool, waiting: bool) -> Group:
    parts: list[RenderableType] = [header(view), summary_line(view)]
    problems = problems_table(p for p in view.problems if p.kind == "Queue")
    if problems is not None:
        parts.append(problems)
    for resource in resources:
        parts += queues_table(view, resource, wide)
    if waiting:
        parts += pending_table(view, wide)
    return Group(*parts)


@contextmanager
def _looks(source: Source) -> Iterator[Callable[[], Inspection]]:
    """Repeated looks: the file read again each time, or the live cluster's watched caches."""
    if source.files:
        yield lambda: source.inspect()[0]
        return
    side = source.scheduler_side()
    try:
        with connect(source.kubeconfig, source.context, side.config, watch=True) as cluster:
            yield lambda: run_inspection(read(cluster, side, source.label), Moment.GIVEN)
    except LiveError as error:
        raise click.ClickException(str(error)) from error

"""``kai simulate``: the real scheduler, binder, pod-grouper and controllers on scenario files against the embedded
cluster, shown as the one view (``kai.components.insight.view``) after the last cycle; with changes, a what-if run
of one input as it is and changed (``kai.cli.whatif``)."""

import logging
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import click
from rich.console import Console

from kai.cli.console import console, emit, filter_options, output_option, width_option
from kai.cli.fix_search import deadline, fix_options, fix_search
from kai.cli.view_text import fixes_section, header, pods_section, problems_table, queues_table, summary_line
from kai.cli.whatif import gather_changes, run_what_if
from kai.components.insight.build import build_view, with_fixes
from kai.components.insight.inspect import Inspection, inspect
from kai.components.insight.queues import NoQueues, subtree
from kai.components.insight.view import View, view_json
from kai.components.podgrouper import PodGrouper
from kai.components.sim.report import as_json, print_timeline
from kai.components.sim.runner import ScenarioRun, run_scenario
from kai.components.sim.scenario import ClockSpec, Scenario, ScenarioError, load_scenarios, scenario_files
from kai.components.sim.whatif.changes import ChangeError
from kai.components.sim.whatif.compare import DEFAULT_PERIOD_S, DEFAULT_RUN_TIME_S, Assumptions
from kai.core.model.duration import format_duration, parse_duration
from kai.core.model.errors import InvalidObject


def _duration(_ctx: click.Context, param: click.Parameter, value: str | None) -> float | None:
    if value is None:
        return None
    try:
        seconds = parse_duration(value, "command line", f"--{param.name}", days=True)
    except InvalidObject as error:
        raise click.BadParameter(error.problem) from None
    if seconds <= 0:
        raise click.BadParameter(f"got {value!r}; must be longer than 0")
    return seconds


@click.command()
@click.argument("paths", nargs=-1, type=click.Path(exists=True, path_type=Path))
@click.option(
    "-f",
    "--file",
    "files",
    multiple=True,
    type=click.Path(exists=True, path_type=Path),
    help="A file or folder, as kai explain and kai queues take it (the same as giving PATHS).",
)
@click.option("--cycles", type=click.IntRange(min=1), help="Scheduling cycles to run (scenarios without a runner).")
@click.option(
    "--period",
    callback=_duration,
    help="Simulated time between cycles (such as 1m): the clock runs, pods with a run time finish. Default: frozen.",
)
@click.option("--duration", callback=_duration, help="Simulated time to run for (such as 8h or 2d); needs a period.")
@click.option(
    "--sample-every",
    "sample_every",
    callback=_duration,
    help="One timeline row per this much time (default: ~24 rows).",
)
@click.option("--check", is_flag=True, help="Compare each scenario's expect block; one PASS/FAIL line each.")
@click.option("--json", "as_json_output", is_flag=True, help="Print every cycle's outcome as JSON (-o json).")
@output_option("wide", "json", "yaml")
@filter_options
@width_option
@fix_options
@click.option(
    "--what-if",
    "what_if",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="Changes (docs/what-if.md): run the input as it is and changed, and compare.",
)
@click.option(
    "--set", "settings", multiple=True, help="A what-if change: queue.NAME.gpu.quota=4, placement.gpu=spread…"
)
@click.option("--add-nodes", multiple=True, help="A what-if change: N:like=NODE adds N copies of NODE.")
@click.option("--remove-node", multiple=True, help="A what-if change: remove NODE (its pods go back to pending).")
@click.option(
    "--evict-pod", multiple=True, help="A what-if change: evict NS/NAME, a running pod (it goes back to pending)."
)
@click.option(
    "--default-run-time",
    help=f"What-if runs: how long batch pods without a run time run (default {format_duration(DEFAULT_RUN_TIME_S)}; "
    "'none': until evicted). Pods of Deployments, StatefulSets, RayClusters, RayServices, LeaderWorkerSets or "
    "restartPolicy Always run to the end.",
)
@click.option(
    "--plot", type=click.Path(file_okay=False, path_type=Path), help="What-if runs: write PNGs and HTML here."
)
def simulate(
    paths: tuple[Path, ...],
    files: tuple[Path, ...],
    cycles: int | None,
    period: float | None,
    duration: float | None,
    sample_every: float | None,
    check: bool,
    as_json_output: bool,
    output: str,
    only_queue: str | None,
    only_namespace: str | None,
    pending: bool,
    width: int | None,
    fix_budget: float,
    fix_candidates: int,
    what_if: Path | None,
    settings: tuple[str, ...],
    add_nodes: tuple[str, ...],
    remove_node: tuple[str, ...],
    evict_pod: tuple[str, ...],
    default_run_time: str | None,
    plot: Path | None,
) -> None:
    """Run the scheduler on scenario files or folders against the embedded cluster.

    Each scenario file runs on its own; plain manifests (Kubernetes objects) given together form one cluster. The
    cluster is shown after the last cycle, its binds done: a summary line, the problems of the input, the pods (one
    row per podgroup when there are many), the waiting podgroups with the cheapest fix a what-if run proves for each
    (within --fix-budget), the queues and, with a running clock, the queues over time. With --period the clock
    advances between cycles. With changes (--what-if, --set, --add-nodes, --remove-node, --evict-pod) one input
    runs twice, as it is and changed, side by side."""
    paths = paths + files
    if not paths:
        raise click.UsageError("give the scenario files or folders to run: kai simulate PATH… (or -f PATH)")
    if period is not None and duration is None and cycles is None:
        raise click.UsageError("--period needs --duration or --cycles: how long to run")
    logging.getLogger(PodGrouper.__module__).setLevel(logging.ERROR)  # what it warns of is listed under Problems
    output = "json" if as_json_output else output
    if what_if or settings or add_nodes or remove_node or evict_pod:
        if check:
            raise click.UsageError("--check compares a scenario's expect block; a what-if run compares two runs")
        changes = (what_if, settings, add_nodes, remove_node, evict_pod)
        _what_if(paths, cycles, period, duration, sample_every, changes, default_run_time, plot, output, width)
        return
    if default_run_time is not None or plot is not None:
        raise click.UsageError("--default-run-time and --plot are for what-if runs (--what-if, --set, --add-nodes…)")
    runs = load_scenarios(scenario_files(list(paths)), cycles, ClockSpec(period or 0.0, duration, sample_every))
    if check:
        _check(runs)
        return
    failed = [(path, error) for path, error in runs if isinstance(error, ScenarioError)]
    for _, error in failed:  # before any table: an error after pages of output is missed
        click.echo(f"error: {error}", err=True)
    documents = []
    out = console(width, output == "wide")
    search_ends = deadline(fix_budget)  # one budget for every file
    for _, scenario in runs:
        if isinstance(scenario, ScenarioError):
            continue
        try:
            ins = _inspect(scenario)
            view = _narrowed(build_view(ins), only_queue, only_namespace, pending)
            view = with_fixes(view, fix_search(ins, fix_budget, fix_candidates, True, search_ends))
        except ScenarioError as error:
            click.echo(f"error: {error}", err=True)
            failed.append((scenario.path, error))
            continue
        if output in ("json", "yaml"):
            documents.append({**as_json(ins.run), "view": view_json(view)})
        else:
            _print(ins, view, out, output == "wide")
    if documents:
        emit(documents, output)
    if failed:
        sys.exit(1)


def _check(runs: list[tuple[Path, Scenario | ScenarioError]]) -> None:
    """``--check``: one line per scenario; a scenario without an expect block has nothing to pass."""
    passed = failed = unchecked = 0
    for path, scenario in runs:
        try:
            if isinstance(scenario, ScenarioError):
                raise scenario
            run = _simulate(scenario)
        except ScenarioError as error:
            failed += 1
            click.echo(f"FAIL {path}\n    {error}")
            continue
        if not scenario.expect:
            unchecked += 1
            click.echo(f"NONE {path}\n    no expect block: nothing to check (scenario-format.md §5)")
        elif run.passed:
            passed += 1
            click.echo(f"PASS {path}")
        else:
            failed += 1
            click.echo(f"FAIL {path}")
            for mismatch in run.mismatches[:5]:
                click.echo(f"    {mismatch}")
    click.echo(f"{passed} passed, {failed} failed" + (f", {unchecked} without expectations" if unchecked else ""))
    if failed or unchecked:
        sys.exit(1)


def _narrowed(view: View, queue: str | None, namespace: str | None, pending: bool) -> View:
    if queue is None and namespace is None and not pending:
        return view
    try:
        queues = subtree(list(view.queues), queue) if queue is not None else None
    except NoQueues as error:
        raise click.ClickException(f"{view.source}: {error}") from error
    return view.only(queues, namespace, pending)


def _print(ins: Inspection, view: View, out: Console, wide: bool) -> None:
    out.print(header(view))
    out.print(summary_line(view))
    problems = problems_table(view.problems)
    if problems is not None:
        out.print(problems)
    for part in pods_section(view, wide):
        out.print(part)
    for part in fixes_section(view, wide):
        out.print(part)
    for part in queues_table(view, "gpu", wide):
        out.print(part)
    print_timeline(ins.run, out)


def _what_if(
    paths: tuple[Path, ...],
    cycles: int | None,
    period: float | None,
    duration: float | None,
    sample_every: float | None,
    changes_given: tuple[Path | None, tuple[str, ...], tuple[str, ...], tuple[str, ...], tuple[str, ...]],
    default_run_time: str | None,
    plot: Path | None,
    output: str,
    width: int | None,
) -> None:
    if cycles is None and duration is None:
        raise click.UsageError("a what-if run needs --cycles or --duration: how long to run")
    try:
        changes = gather_changes(*changes_given)
    except ChangeError as error:
        raise click.ClickException(str(error)) from None
    run_time = _run_time(default_run_time) if default_run_time is not None else DEFAULT_RUN_TIME_S
    clock = ClockSpec(period or DEFAULT_PERIOD_S, duration, sample_every)
    runs = load_scenarios(scenario_files(list(paths)), cycles, clock)
    for _, scenario in runs:
        if isinstance(scenario, ScenarioError):
            raise click.ClickException(str(scenario))
    if len(runs) != 1:
        raise click.UsageError("a what-if run takes one snapshot or scenario, or manifests that form one cluster")
    ((_, scenario),) = runs
    assert isinstance(scenario, Scenario)
    given = Assumptions(
        tuple(str(path) for path in paths), scenario.now, scenario.runner.cycles_before_check, clock.period_s, run_time
    )
    run_what_if(scenario, changes, given, console(width), plot, output == "json")


def _run_time(text: str) -> float | None:
    if text == "none":
        return None
    try:
        seconds = parse_duration(text, "command line", "--default-run-time", days=True)
    except InvalidObject as error:
        raise click.BadParameter(f"{error.problem}; or 'none'", param_hint="--default-run-time") from None
    if seconds <= 0:
        raise click.BadParameter(f"got {text!r}; must be longer than 0", param_hint="--default-run-time")
    return seconds


T = TypeVar("T")


def _one_line(scenario: Scenario, run: Callable[[Scenario], T]) -> T:
    """``run`` on the scenario; whatever goes wrong is one line naming the file (no input may produce a
    traceback)."""
    try:
        return run(scenario)
    except Exception as error:  # a kai bug: still one line for the user, with what is needed to report it
        raise ScenarioError(
            f"{scenario.path}: kai failed on this file ({type(error).__name__}: {error}); please report it"
        ) from error


def _inspect(scenario: Scenario) -> Inspection:
    return _one_line(scenario, inspect)


def _simulate(scenario: Scenario) -> ScenarioRun:
    return _one_line(scenario, run_scenario)

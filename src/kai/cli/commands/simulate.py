"""``kai simulate``: the real scheduler, binder, pod-grouper and controllers on scenario files against the embedded
cluster; with changes, a what-if run of one input as it is and changed (``kai.cli.whatif``)."""

import json
import logging
import sys
from pathlib import Path

import click
from rich.console import Console

from kai.cli.whatif import gather_changes, run_what_if
from kai.components.podgrouper import PodGrouper
from kai.components.sim.report import as_json, print_tables
from kai.components.sim.runner import ScenarioRun, run_scenario
from kai.components.sim.scenario import ClockSpec, Scenario, ScenarioError, load_scenarios, scenario_files
from kai.components.sim.whatif.changes import ChangeError
from kai.components.sim.whatif.compare import DEFAULT_PERIOD_S, DEFAULT_RUN_TIME_S
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
@click.argument("paths", nargs=-1, required=True, type=click.Path(exists=True, path_type=Path))
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
@click.option("--json", "as_json_output", is_flag=True, help="Print every cycle's outcome as JSON.")
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
    help=f"What-if runs: how long pods without a run time run (default {format_duration(DEFAULT_RUN_TIME_S)}; "
    "'none': until evicted).",
)
@click.option(
    "--plot", type=click.Path(file_okay=False, path_type=Path), help="What-if runs: write PNGs and HTML here."
)
def simulate(
    paths: tuple[Path, ...],
    cycles: int | None,
    period: float | None,
    duration: float | None,
    sample_every: float | None,
    check: bool,
    as_json_output: bool,
    what_if: Path | None,
    settings: tuple[str, ...],
    add_nodes: tuple[str, ...],
    remove_node: tuple[str, ...],
    evict_pod: tuple[str, ...],
    default_run_time: str | None,
    plot: Path | None,
) -> None:
    """Run the scheduler on scenario files or folders against the embedded cluster.

    Each scenario file runs on its own; plain manifests (Kubernetes objects) given together form one cluster.
    With --period the clock advances between cycles and the queues' allocation over time is shown. With changes
    (--what-if, --set, --add-nodes, --remove-node, --evict-pod) one input runs twice, as it is and changed, side by
    side."""
    if period is not None and duration is None and cycles is None:
        raise click.UsageError("--period needs --duration or --cycles: how long to run")
    logging.getLogger(PodGrouper.__module__).setLevel(logging.ERROR)  # what it warns of is listed under Problems
    console = Console(width=200)
    if what_if or settings or add_nodes or remove_node or evict_pod:
        if check:
            raise click.UsageError("--check compares a scenario's expect block; a what-if run compares two runs")
        changes = (what_if, settings, add_nodes, remove_node, evict_pod)
        _what_if(paths, cycles, period, duration, sample_every, changes, default_run_time, plot, as_json_output)
        return
    if default_run_time is not None or plot is not None:
        raise click.UsageError("--default-run-time and --plot are for what-if runs (--what-if, --set, --add-nodes…)")
    passed = failed = 0
    documents = []
    clock = ClockSpec(period or 0.0, duration, sample_every)
    for path, scenario in load_scenarios(scenario_files(list(paths)), cycles, clock):
        try:
            if isinstance(scenario, ScenarioError):
                raise scenario
            run = _simulate(scenario)
        except ScenarioError as error:
            failed += 1
            if check:
                click.echo(f"FAIL {path}\n    {error}")
            else:
                click.echo(f"error: {error}", err=True)
            continue
        if as_json_output:
            documents.append(as_json(run))
        if check:
            if run.passed:
                passed += 1
                click.echo(f"PASS {path}")
            else:
                failed += 1
                click.echo(f"FAIL {path}")
                for mismatch in run.mismatches[:5]:
                    click.echo(f"    {mismatch}")
        elif not as_json_output:
            print_tables(run, console)
    if as_json_output:
        click.echo(json.dumps(documents, indent=2, default=str))
    if check:
        click.echo(f"{passed} passed, {failed} failed")
    if failed:
        sys.exit(1)


def _what_if(
    paths: tuple[Path, ...],
    cycles: int | None,
    period: float | None,
    duration: float | None,
    sample_every: float | None,
    changes_given: tuple[Path | None, tuple[str, ...], tuple[str, ...], tuple[str, ...], tuple[str, ...]],
    default_run_time: str | None,
    plot: Path | None,
    json_output: bool,
) -> None:
    if len(paths) != 1:
        raise click.UsageError("a what-if run takes one snapshot or scenario")
    if cycles is None and duration is None:
        raise click.UsageError("a what-if run needs --cycles or --duration: how long to run")
    try:
        changes = gather_changes(*changes_given)
    except ChangeError as error:
        raise click.ClickException(str(error)) from None
    run_time = _run_time(default_run_time) if default_run_time is not None else DEFAULT_RUN_TIME_S
    clock = ClockSpec(period or DEFAULT_PERIOD_S, duration, sample_every)
    ((_, scenario),) = load_scenarios(list(paths), cycles, clock)
    if isinstance(scenario, ScenarioError):
        raise click.ClickException(str(scenario))
    run_what_if(scenario, changes, clock.period_s, run_time, Console(width=200), plot, json_output)


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


def _simulate(scenario: Scenario) -> ScenarioRun:
    """One run; whatever goes wrong is one line naming the file (no input may produce a traceback)."""
    path = scenario.path
    try:
        return run_scenario(scenario)
    except Exception as error:  # a kai bug: still one line for the user, with what is needed to report it
        raise ScenarioError(
            f"{path}: kai failed on this file ({type(error).__name__}: {error}); please report it"
        ) from error

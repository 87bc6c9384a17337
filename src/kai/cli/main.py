"""The ``kai`` command: one entry point for every component (today: ``kai simulate``)."""

import json
import sys
from pathlib import Path

import click
from rich.console import Console

from kai.components.sim.report import as_json, print_tables
from kai.components.sim.runner import run_scenario
from kai.components.sim.scenario import ScenarioError, load_scenario, scenario_files


@click.group()
def main() -> None:
    """kai — the KAI Scheduler in Python."""


@main.command()
@click.argument("paths", nargs=-1, required=True, type=click.Path(exists=True, path_type=Path))
@click.option("--cycles", type=click.IntRange(min=1), help="Scheduling cycles to run (scenarios without a runner).")
@click.option("--check", is_flag=True, help="Compare each scenario's expect block; one PASS/FAIL line each.")
@click.option("--json", "as_json_output", is_flag=True, help="Print every cycle's outcome as JSON.")
def simulate(paths: tuple[Path, ...], cycles: int | None, check: bool, as_json_output: bool) -> None:
    """Run the scheduler on scenario files or folders against the embedded cluster."""
    console = Console(width=200)
    passed = failed = 0
    documents = []
    for path in scenario_files(list(paths)):
        try:
            run = run_scenario(load_scenario(path, cycles))
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

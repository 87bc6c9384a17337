"""``kai simulate … --what-if``: the changes from a file and the command line, the two runs with a progress bar on
a terminal, the side-by-side report and, with ``--plot``, the plots."""

import json
from pathlib import Path

import click
from rich.console import Console
from rich.progress import Progress

from kai.components.sim.scenario import Scenario
from kai.components.sim.whatif.apply import apply_changes
from kai.components.sim.whatif.changes import (
    ChangeError,
    Changes,
    parse_add_nodes,
    parse_set,
    pod_key,
    read_changes,
)
from kai.components.sim.whatif.compare import Assumptions, Comparison, compare
from kai.components.sim.whatif.report import as_json, print_comparison


def gather_changes(
    file: Path | None,
    settings: tuple[str, ...],
    add_nodes: tuple[str, ...],
    remove_nodes: tuple[str, ...],
    evict_pods: tuple[str, ...] = (),
) -> Changes:
    """The file's changes, then the command line's; ``ChangeError`` for the first that cannot be used."""
    changes = read_changes(file) if file is not None else Changes()
    for text in settings:
        changes.extend(parse_set(text))
    for text in add_nodes:
        changes.extend(parse_add_nodes(text))
    changes.remove_nodes += list(remove_nodes)
    changes.evict_pods += [pod_key(text, f"--evict-pod {text}") for text in evict_pods]
    return changes


def run_what_if(
    scenario: Scenario,
    changes: Changes,
    assumptions: Assumptions,
    console: Console,
    plot: Path | None,
    json_output: bool = False,
) -> Comparison:
    try:
        changed = apply_changes(scenario, changes)
    except ChangeError as error:
        raise click.ClickException(str(error)) from None
    with Progress(console=console, transient=True, disable=not console.is_terminal) as progress:
        task = progress.add_task("simulating base and changed", total=assumptions.cycles)
        comparison = compare(
            scenario, changed, assumptions, changes.describe(), lambda done: progress.update(task, completed=done)
        )
    written: list[Path] = []
    if plot is not None:
        from kai.components.sim.whatif.plots import write_plots  # matplotlib: a second to import, for --plot only

        written = write_plots(comparison, plot)
    if json_output:
        document = {**as_json(comparison), "plots": [str(path) for path in written]}
        click.echo(json.dumps(document, indent=2))
        return comparison
    print_comparison(comparison, console, scenario.clock.sample_every_s)
    if written:
        console.print("wrote " + ", ".join(str(path) for path in written))
    return comparison

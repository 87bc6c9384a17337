"""Where the insight commands print: as wide as the terminal (or ``--width``), and what they share on the command
line: the output formats kubectl users expect and the filters."""

import json
import os
import sys
from collections.abc import Callable
from typing import Any, TypeVar

import click
import yaml
from rich.console import Console

F = TypeVar("F", bound=Callable[..., Any])
PIPE_WIDTH = 200
"""Columns when the output is no terminal and ``COLUMNS`` is not set: wide enough that a pipe or a log is rarely
wrapped (tables take only the columns they need)."""


def console(width: int | None = None, wide: bool = False) -> Console:
    """A console ``width`` columns wide; by default the terminal's, else ``COLUMNS``, else the terminal's the output
    is piped from (``kai … | less`` in a 100-column terminal is 100 wide), else ``PIPE_WIDTH``; ``wide`` (``-o
    wide``): ``PIPE_WIDTH`` unless given, every column whole, as kubectl's wide lines run past the terminal."""
    if width is None and wide:
        width = PIPE_WIDTH
    if width is None:
        probe = Console()
        width = probe.width if probe.is_terminal or os.environ.get("COLUMNS") else _piped_from() or PIPE_WIDTH
    return Console(width=width, highlight=False, soft_wrap=False)


def _piped_from() -> int | None:
    """The width of the terminal stderr or stdin is (None when neither is one)."""
    for stream in (sys.stderr, sys.stdin):
        try:
            return os.get_terminal_size(stream.fileno()).columns
        except (AttributeError, OSError, ValueError):
            continue
    return None


def width_option(command: F) -> F:
    return click.option(
        "--width",
        type=click.IntRange(min=40),
        help="Columns to fit the output in (default: the terminal's, else $COLUMNS, else 200).",
    )(command)


def output_option(*formats: str) -> Callable[[F], F]:
    """``-o FORMAT``: text (the default), and ``formats`` (wide, json, yaml) as kubectl names them."""

    meanings = {"wide": "wide: every column and row, nothing folded", "json": "json / yaml: the data, for tools"}
    told = "; ".join(text for key, text in meanings.items() if key in formats)

    def decorate(command: F) -> F:
        return click.option(
            "-o",
            "--output",
            type=click.Choice(["text", *formats]),
            default="text",
            show_default=True,
            help=f"{told}.",
        )(command)

    return decorate


def filter_options(command: F) -> F:
    """``--queue``, ``--namespace`` and ``--pending``, as kubectl and squeue narrow a listing."""
    command = click.option("--pending", is_flag=True, help="Only what waits.")(command)
    command = click.option("--namespace", "only_namespace", help="Only pods and podgroups of this namespace.")(command)
    return click.option("--queue", "only_queue", help="Only this queue and the queues under it.")(command)


def emit(document: Any, output: str) -> None:
    """Print ``document`` as JSON or YAML."""
    if output == "yaml":
        click.echo(yaml.safe_dump(json.loads(json.dumps(document, default=str)), sort_keys=False), nl=False)
    else:
        click.echo(json.dumps(document, indent=2, default=str))

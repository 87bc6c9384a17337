"""``main.COMMANDS`` is the one place a command is added: each module of cli/commands gives it its commands, and
every command ``kai`` has comes from one of them."""

import importlib
from pathlib import Path

import click
from registry_support import module_names

from kai.cli.main import COMMANDS, main


def test_every_command_module_is_registered_and_every_command_comes_from_one() -> None:
    modules = {command.callback.__module__ for command in COMMANDS if command.callback is not None}
    assert modules == {f"kai.cli.commands.{name}" for name in module_names(Path("kai/cli/commands"))}
    for name in module_names(Path("kai/cli/commands")):
        module = importlib.import_module(f"kai.cli.commands.{name}")
        defined = [value for value in vars(module).values() if isinstance(value, click.Command)]
        assert all(command in COMMANDS for command in defined), name


def test_kai_has_exactly_the_registered_commands_under_their_names() -> None:
    assert main.commands == {command.name: command for command in COMMANDS}

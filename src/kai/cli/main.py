"""The ``kai`` command: one entry point for every component, the simulator, and the questions about a cluster
(``kai explain``, ``kai queues``, ``kai snapshot``, ``kai doctor``, ``kai dashboard``). Each command is a module of
``kai.cli.commands``; adding one means adding it to ``COMMANDS``."""

import click

from kai.cli.commands import (
    admission,
    apply_crds,
    components,
    dashboard,
    doctor,
    explain,
    operator,
    queues,
    simulate,
    snapshot,
)


@click.group()
def main() -> None:
    """kai — the KAI Scheduler in Python."""


COMMANDS: tuple[click.Command, ...] = (
    simulate.simulate,
    *components.COMMANDS,
    operator.operator,
    apply_crds.apply_crds_command,
    admission.admission,
    doctor.doctor,
    explain.explain,
    queues.queues,
    snapshot.snapshot,
    dashboard.dashboard,
)
for command in COMMANDS:
    main.add_command(command)

"""Where ``kai explain`` and ``kai queues`` get what they look at: a file (scenario, manifests or snapshot) or a
live cluster (kubeconfig flags as the component commands), run through one cycle of the real scheduler."""

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import click

from kai.cli.client_flags import KUBECONFIG_HELP
from kai.cluster.yamlfile import YamlFileError, read_mapping
from kai.components.insight.inspect import Inspection, Moment, inspect
from kai.components.insight.live import LiveError, SchedulerSide, connect, read, scheduler_side
from kai.components.scheduler.node_pool import NodePool
from kai.components.sim.scenario import Scenario, ScenarioError, load_scenarios
from kai.core.config import parse_config
from kai.core.model import names
from kai.core.model.errors import InvalidObject

F = TypeVar("F", bound=Callable[..., Any])
DEFAULT_SCHEDULER = "127.0.0.1:8081"


def source_options(command: F) -> F:
    """``-f FILE`` or the live cluster's flags, and where the running scheduler's plugin server is."""
    options = [
        click.option(
            "-f",
            "--file",
            "files",
            multiple=True,
            type=click.Path(exists=True, dir_okay=False, path_type=Path),
            help="A scenario, manifests (several -f form one cluster) or a snapshot zip, instead of a live cluster.",
        ),
        click.option("--cycles", type=click.IntRange(min=1), help="With -f: cycles to run (default: the file's)."),
        click.option("--kubeconfig", type=click.Path(exists=True, dir_okay=False), help=KUBECONFIG_HELP),
        click.option("--context", help="Kubeconfig context."),
        click.option(
            "--scheduler-conf",
            type=click.Path(exists=True, dir_okay=False, path_type=Path),
            help="Scheduler configuration to run (default: the running scheduler's, else KAI's default).",
        ),
        click.option(
            "--scheduler-address",
            default=DEFAULT_SCHEDULER,
            show_default=True,
            help="HOST:PORT of the scheduler's plugin server (its last cycles, config and node pool).",
        ),
    ]
    command = node_pool_options(command)
    for option in reversed(options):
        command = option(command)
    return command


def node_pool_options(command: F) -> F:
    """The node pool to look at, with the scheduler's own flags."""
    command = click.option(
        "--nodepool-label-key",
        default=names.NODE_POOL_LABEL,
        show_default=True,
        help="The label that assigns nodes, queues and PodGroups to a pool ('' = no pools).",
    )(command)
    return click.option(
        "--partition-label-value",
        help="Look at this node pool as its scheduler does ('' = the objects without the label). Default: the "
        "running scheduler's pool; with -f, the snapshot's (else one pool of every object); else ''.",
    )(command)


def given_node_pool(options: dict[str, Any]) -> NodePool | None:
    """The pool of the node-pool flags (popped from ``options``); None when neither was given."""
    key, value = options.pop("nodepool_label_key"), options.pop("partition_label_value")
    return None if value is None and key == names.NODE_POOL_LABEL else NodePool(key, value or "")


@dataclass
class Source:
    files: tuple[Path, ...]
    cycles: int | None
    kubeconfig: str | None
    context: str | None
    scheduler_conf: Path | None
    scheduler_address: str
    node_pool: NodePool | None
    """The pool the user gave (``--partition-label-value``); None: the running scheduler's, or the file's."""

    @classmethod
    def of(cls, options: dict[str, Any]) -> "Source":
        pool = given_node_pool(options)
        fields = ("files", "cycles", "kubeconfig", "context", "scheduler_conf", "scheduler_address")
        return cls(**{name: options.pop(name) for name in fields}, node_pool=pool)

    @property
    def label(self) -> str:
        if self.files:
            return " + ".join(str(path) for path in self.files)
        return f"the cluster ({self.context or 'current context'})"

    def inspect(self) -> tuple[Inspection, SchedulerSide | None]:
        """One look: the file's cycles (the cluster after them), or one dry cycle over the live cluster (the
        cluster as it is)."""
        if self.files:
            return run_inspection(self._file_scenario(), Moment.AFTER), None
        side = self.scheduler_side()
        try:
            with connect(self.kubeconfig, self.context, side.config, watch=False) as cluster:
                scenario = read(cluster, side, self.label)
        except LiveError as error:
            raise click.ClickException(str(error)) from error
        return run_inspection(scenario, Moment.GIVEN), side

    def config_of(self, ins: Inspection) -> str:
        """Where the scheduler config of a look came from."""
        if self.scheduler_conf is not None:
            return str(self.scheduler_conf)
        if self.files:
            return "the input's, else KAI's default"
        return self.scheduler_side().source

    def scheduler_side(self) -> SchedulerSide:
        try:
            return scheduler_side(self.scheduler_conf, self.scheduler_address, self.node_pool)
        except LiveError as error:
            raise click.ClickException(str(error)) from error

    def _file_scenario(self) -> Scenario:
        runs = load_scenarios(list(self.files), self.cycles)
        errors = [str(scenario) for _, scenario in runs if isinstance(scenario, ScenarioError)]
        if errors:
            raise click.ClickException("\n".join(errors))
        if len(runs) != 1:
            raise click.ClickException(
                f"give one scenario or snapshot, or manifests that together form one cluster (got {len(runs)}: "
                + ", ".join(str(path) for path, _ in runs)
                + ")"
            )
        scenario = runs[0][1]
        assert isinstance(scenario, Scenario)
        if self.scheduler_conf is not None:
            try:
                config = parse_config(read_mapping(self.scheduler_conf, "a scheduler config"))
            except (InvalidObject, YamlFileError) as error:
                raise click.ClickException(str(error)) from error
            scenario = dataclasses.replace(scenario, config=config)
        if self.node_pool is not None:
            scenario = scenario.in_pool(self.node_pool.shard)
        return scenario


def run_inspection(scenario: Scenario, moment: Moment) -> Inspection:
    try:
        return inspect(scenario, moment)
    except Exception as error:  # a kai bug: one line for the user, with what is needed to report it
        raise click.ClickException(
            f"kai failed on {scenario.name} ({type(error).__name__}: {error}); please report it"
        ) from error

"""The component commands: ``kai scheduler``, ``binder``, ``controllers``, ``podgrouper``, ``podgroup-controller``,
``queue-controller`` and ``all`` (all four in one process). They take the same flags and differ only in the
components they run (``kai.components.runtime``)."""

import dataclasses
import logging
from dataclasses import dataclass
from pathlib import Path

import click

from kai.cli.client_flags import KUBECONFIG_HELP, rate_limit_options, reconciles_option
from kai.cluster.kube.ratelimit import RateLimit
from kai.cluster.yamlfile import YamlFileError, read_mapping
from kai.components.runtime.loops import RuntimeOptions
from kai.components.runtime.serve import ServeError, serve
from kai.components.scheduler.node_pool import NodePool
from kai.components.scheduler.usage import UsageError
from kai.components.shared.components import COMPONENTS, IN_ALL
from kai.components.shared.endpoints import EndpointError
from kai.core.config import parse_config
from kai.core.model import names
from kai.core.model.duration import parse_duration
from kai.core.model.errors import InvalidObject


@dataclass(frozen=True)
class ServeFlags:
    """What a component command was given, as ``_serve`` reads it (the config file and the period still as text)."""

    kubeconfig: str | None
    context: str | None
    scheduler_conf: Path | None
    schedule_period: str
    metrics_bind_address: str
    health_probe_bind_address: str
    leader_elect: bool
    reservation_namespace: str
    node_pool: NodePool
    scheduler_name: str | None
    lease_name: str
    plugin_server_port: int
    rate_limit: RateLimit
    max_concurrent_reconciles: int


def _serve(components: set[str], flags: ServeFlags) -> None:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    logging.getLogger("httpx2").setLevel(logging.WARNING)
    try:
        config = parse_config(read_mapping(flags.scheduler_conf, "a scheduler config") if flags.scheduler_conf else {})
        period = parse_duration(flags.schedule_period, "command line", "--schedule-period")
    except (InvalidObject, YamlFileError) as error:
        raise click.ClickException(str(error)) from error
    for warning in config.warnings:
        logging.getLogger("kai").warning("%s", warning)
    if flags.scheduler_name:
        config = dataclasses.replace(config, scheduler_name=flags.scheduler_name)
    options = RuntimeOptions(
        config=config,
        node_pool=flags.node_pool,
        schedule_period_s=period,
        metrics_bind_address=flags.metrics_bind_address,
        health_probe_bind_address=flags.health_probe_bind_address,
        plugin_server_port=flags.plugin_server_port,
        write_workers=16,
        max_concurrent_reconciles=flags.max_concurrent_reconciles,
        reservation_namespace=flags.reservation_namespace,
    )
    try:
        serve(
            components,
            options,
            flags.kubeconfig,
            flags.context,
            flags.leader_elect,
            lease_name=flags.lease_name,
            rate_limit=flags.rate_limit,
        )
    except (ServeError, EndpointError, UsageError) as error:
        raise click.ClickException(str(error)) from error


PROBES = ":8081"
SCHEDULER_PROBES = ":8082"
"""Commands that run the scheduler keep KAI's plugin server port (127.0.0.1:8081), so their probes move aside."""
PLUGIN_SERVER_PORT = 8081


def component_command(name: str, components: tuple[str, ...], help_text: str) -> click.Command:
    schedules = "scheduler" in components

    @click.command(name=name, help=help_text)
    @click.option("--kubeconfig", type=click.Path(exists=True, dir_okay=False), help=KUBECONFIG_HELP)
    @click.option("--context", help="Kubeconfig context.")
    @click.option(
        "--scheduler-conf",
        type=click.Path(exists=True, dir_okay=False, path_type=Path),
        help="Scheduler configuration (actions, tiers) as YAML.",
    )
    @click.option("--schedule-period", default="1s", show_default=True, help="Time between scheduling cycles.")
    @click.option(
        "--metrics-bind-address",
        "--listen-address",
        "--metrics-listen-address",
        "metrics_bind_address",
        default=":8080",
        show_default=True,
        help="HOST:PORT for /metrics (KAI's names; :PORT = every interface, 0 = off).",
    )
    @click.option(
        "--health-probe-bind-address",
        default=SCHEDULER_PROBES if schedules else PROBES,
        show_default=True,
        help="HOST:PORT for /healthz and /readyz (0 = off).",
    )
    @click.option("--leader-elect", is_flag=True, help="Run only while holding this component's Lease.")
    @click.option("--scheduler-name", help="spec.schedulerName of the pods to schedule (default: the config's).")
    @click.option(
        "--nodepool-label-key",
        default=names.NODE_POOL_LABEL,
        show_default=True,
        help="Label that assigns nodes, queues and PodGroups to a shard ('' = no shards).",
    )
    @click.option(
        "--partition-label-value",
        default="",
        help="The shard's value of that label ('' = the objects without it).",
    )
    @click.option(
        "--resource-reservation-namespace",
        default=names.RESERVATION_NAMESPACE,
        show_default=True,
        help="Namespace of the binder's GPU reservation pods (created if missing).",
    )
    @click.option(
        "--plugin-server-port",
        type=click.IntRange(0, 65535),
        default=PLUGIN_SERVER_PORT if schedules else 0,
        show_default=schedules,
        hidden=not schedules,
        help="Port on 127.0.0.1 for /get-snapshot, /get-job-order and /get-cycles (0 = off).",
    )
    @rate_limit_options(len(components))
    @reconciles_option
    def command(
        kubeconfig: str | None,
        context: str | None,
        scheduler_conf: Path | None,
        schedule_period: str,
        metrics_bind_address: str,
        health_probe_bind_address: str,
        leader_elect: bool,
        resource_reservation_namespace: str,
        scheduler_name: str | None,
        nodepool_label_key: str,
        partition_label_value: str,
        plugin_server_port: int,
        qps: float,
        burst: int,
        max_concurrent_reconciles: int,
    ) -> None:
        lease = name if name not in ("scheduler", "all") else "kai-scheduler"
        if name == "scheduler" and partition_label_value:
            lease = f"kai-scheduler-{partition_label_value}"  # KAI's per-shard Lease
        flags = ServeFlags(
            kubeconfig=kubeconfig,
            context=context,
            scheduler_conf=scheduler_conf,
            schedule_period=schedule_period,
            metrics_bind_address=metrics_bind_address,
            health_probe_bind_address=health_probe_bind_address,
            leader_elect=leader_elect,
            reservation_namespace=resource_reservation_namespace,
            node_pool=NodePool(nodepool_label_key, partition_label_value),
            scheduler_name=scheduler_name,
            lease_name=lease,
            plugin_server_port=plugin_server_port,
            rate_limit=RateLimit(qps, burst),
            max_concurrent_reconciles=max_concurrent_reconciles,
        )
        _serve(set(components), flags)

    return command


_ALL = [COMPONENTS[name].operand or name for name in IN_ALL]
COMMANDS = (
    *(component_command(c.name, (c.name,), c.help) for c in COMPONENTS.values() if c.loop),
    component_command("all", IN_ALL, f"Run the {', '.join(_ALL[:-1])} and {_ALL[-1]} in one process."),
)

"""The ``kai`` command: one entry point for every component, the simulator, and the questions about a cluster
(``kai explain``, ``kai queues``, ``kai snapshot``)."""

import dataclasses
import json
import logging
import sys
import threading
from pathlib import Path
from typing import Any

import click
from rich.console import Console

from kai.cli.client_flags import rate_limit_options, reconciles_option
from kai.cli.doctor import doctor
from kai.cli.explain import explain
from kai.cli.queues import queues
from kai.cli.snapshot import snapshot
from kai.cli.whatif import DEFAULT_PERIOD_S, DEFAULT_RUN_TIME, gather_changes, run_what_if
from kai.cluster.kube.client import KubeCluster
from kai.cluster.kube.errors import ApiError
from kai.cluster.kube.kubeconfig import KubeconfigError
from kai.cluster.kube.ratelimit import RateLimit
from kai.cluster.yamlfile import YamlFileError, read_mapping
from kai.components.admission.component import DEFAULT_CERT_DIR, AdmissionError, AdmissionOptions, serve_admission
from kai.components.admission.settings import DEFAULT_RUNTIME_CLASS, AdmissionSettings
from kai.components.endpoints import EndpointError
from kai.components.operator.crds import CrdFileError, apply_crds, read_crds
from kai.components.operator.loop import WATCHED, operate
from kai.components.operator.settings import Image
from kai.components.podgrouper import PodGrouper
from kai.components.runtime import COMPONENTS, RuntimeOptions
from kai.components.scheduler.node_pool import NodePool
from kai.components.scheduler.usage import UsageError
from kai.components.serve import ServeError, serve, serve_body
from kai.components.sim.report import as_json, print_tables
from kai.components.sim.runner import ScenarioRun, run_scenario
from kai.components.sim.scenario import ClockSpec, Scenario, ScenarioError, load_scenarios, scenario_files
from kai.components.sim.whatif.changes import ChangeError
from kai.core.framework.config import parse_config
from kai.core.model import names
from kai.core.model.duration import parse_duration
from kai.core.model.errors import InvalidObject


@click.group()
def main() -> None:
    """kai — the KAI Scheduler in Python."""


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


@main.command()
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
    "--default-run-time",
    help=f"What-if runs: how long pods without a run time run (default {DEFAULT_RUN_TIME}; 'none': until evicted).",
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
    default_run_time: str | None,
    plot: Path | None,
) -> None:
    """Run the scheduler on scenario files or folders against the embedded cluster.

    Each scenario file runs on its own; plain manifests (Kubernetes objects) given together form one cluster.
    With --period the clock advances between cycles and the queues' allocation over time is shown. With changes
    (--what-if, --set, --add-nodes, --remove-node) one input runs twice, as it is and changed, side by side."""
    if period is not None and duration is None and cycles is None:
        raise click.UsageError("--period needs --duration or --cycles: how long to run")
    logging.getLogger(PodGrouper.__module__).setLevel(logging.ERROR)  # what it warns of is listed under Problems
    console = Console(width=200)
    if what_if or settings or add_nodes or remove_node:
        if check:
            raise click.UsageError("--check compares a scenario's expect block; a what-if run compares two runs")
        changes = (what_if, settings, add_nodes, remove_node)
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
    changes_given: tuple[Path | None, tuple[str, ...], tuple[str, ...], tuple[str, ...]],
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
    run_time = _run_time(default_run_time if default_run_time is not None else DEFAULT_RUN_TIME)
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


def _serve(
    components: set[str],
    kubeconfig: str | None,
    context: str | None,
    scheduler_conf: Path | None,
    schedule_period: str,
    metrics_bind_address: str,
    health_probe_bind_address: str,
    leader_elect: bool,
    reservation_namespace: str,
    node_pool: NodePool,
    scheduler_name: str | None,
    lease_name: str,
    plugin_server_port: int,
    rate_limit: RateLimit,
    max_concurrent_reconciles: int,
) -> None:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    logging.getLogger("httpx2").setLevel(logging.WARNING)
    try:
        config = parse_config(read_mapping(scheduler_conf, "a scheduler config") if scheduler_conf else {})
        period = parse_duration(schedule_period, "command line", "--schedule-period")
    except (InvalidObject, YamlFileError) as error:
        raise click.ClickException(str(error)) from error
    for warning in config.warnings:
        logging.getLogger("kai").warning("%s", warning)
    if scheduler_name:
        config = dataclasses.replace(config, scheduler_name=scheduler_name)
    options = RuntimeOptions(
        config=config,
        node_pool=node_pool,
        schedule_period_s=period,
        metrics_bind_address=metrics_bind_address,
        health_probe_bind_address=health_probe_bind_address,
        plugin_server_port=plugin_server_port,
        write_workers=16,
        max_concurrent_reconciles=max_concurrent_reconciles,
        reservation_namespace=reservation_namespace,
    )
    try:
        serve(components, options, kubeconfig, context, leader_elect, lease_name=lease_name, rate_limit=rate_limit)
    except (ServeError, EndpointError, UsageError) as error:
        raise click.ClickException(str(error)) from error


PROBES = ":8081"
SCHEDULER_PROBES = ":8082"
"""Commands that run the scheduler keep KAI's plugin server port (127.0.0.1:8081), so their probes move aside."""
PLUGIN_SERVER_PORT = 8081


def _component_command(name: str, components: tuple[str, ...], help_text: str) -> None:
    schedules = "scheduler" in components

    @main.command(name=name, help=help_text)
    @click.option(
        "--kubeconfig", type=click.Path(exists=True, dir_okay=False), help="Kubeconfig (default: in-cluster)."
    )
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
        _serve(
            set(components),
            kubeconfig,
            context,
            scheduler_conf,
            schedule_period,
            metrics_bind_address,
            health_probe_bind_address,
            leader_elect,
            resource_reservation_namespace,
            NodePool(nodepool_label_key, partition_label_value),
            scheduler_name,
            lease,
            plugin_server_port,
            RateLimit(qps, burst),
            max_concurrent_reconciles,
        )


_component_command("scheduler", ("scheduler",), "Run scheduling cycles and write BindRequests and statuses.")
_component_command("binder", ("binder",), "Bind pods named by BindRequests.")
_component_command("controllers", ("controllers",), "Keep Queue and PodGroup status up to date.")
_component_command("podgrouper", ("podgrouper",), "Create a PodGroup for every ungrouped kai-scheduler pod.")
_component_command("podgroup-controller", ("podgroup-controller",), "Keep PodGroup status (resources) up to date.")
_component_command("queue-controller", ("queue-controller",), "Keep Queue status up to date from PodGroup status.")
_component_command("all", COMPONENTS, "Run the scheduler, binder, controllers and pod-grouper in one process.")


@main.command()
@click.option("--kubeconfig", type=click.Path(exists=True, dir_okay=False), help="Kubeconfig (default: in-cluster).")
@click.option("--context", help="Kubeconfig context.")
@click.option(
    "--image-repository",
    envvar="KAI_IMAGE_REPOSITORY",
    default="",
    help="Registry path of the kai image every component runs [env KAI_IMAGE_REPOSITORY].",
)
@click.option("--image-tag", envvar="KAI_IMAGE_TAG", default="latest", show_default=True, help="[env KAI_IMAGE_TAG]")
@click.option("--period", default="10s", show_default=True, help="Longest time between two reconcile passes.")
@click.option("--metrics-bind-address", default=":8080", show_default=True, help="HOST:PORT for /metrics (0 = off).")
@click.option("--health-probe-bind-address", default=":8081", show_default=True, help="HOST:PORT for the probes.")
@click.option("--leader-elect", is_flag=True, help="Run only while holding the kai-operator Lease.")
@click.option("--namespace", default="kai-scheduler", show_default=True, help="Namespace of the operator's Lease.")
@rate_limit_options()
def operator(
    kubeconfig: str | None,
    context: str | None,
    image_repository: str,
    image_tag: str,
    period: str,
    metrics_bind_address: str,
    health_probe_bind_address: str,
    leader_elect: bool,
    namespace: str,
    qps: float,
    burst: int,
) -> None:
    """Deploy kai from the Config kai-config and the SchedulingShards (KAI's operator)."""
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    logging.getLogger("httpx2").setLevel(logging.WARNING)
    try:
        period_s = parse_duration(period, "command line", "--period")
    except InvalidObject as error:
        raise click.ClickException(str(error)) from error
    image = Image(image_repository, "kai", image_tag)

    def body(cluster: KubeCluster, stop: threading.Event, _registry: object, _health: object) -> None:
        operate(cluster, image, period_s, stop)

    try:
        serve_body(
            list(WATCHED),
            body,
            metrics_bind_address,
            health_probe_bind_address,
            kubeconfig,
            context,
            leader_elect,
            namespace,
            "kai-operator",
            RateLimit(qps, burst),
        )
    except (ServeError, EndpointError) as error:
        raise click.ClickException(str(error)) from error


@main.command(name="apply-crds")
@click.argument("paths", nargs=-1, required=True, type=click.Path(exists=True, path_type=Path))
@click.option("--kubeconfig", type=click.Path(exists=True, dir_okay=False), help="Kubeconfig (default: in-cluster).")
@click.option("--context", help="Kubeconfig context.")
def apply_crds_command(paths: tuple[Path, ...], kubeconfig: str | None, context: str | None) -> None:
    """Apply CRDs server-side, taking them over from Helm (the chart's CRD upgrade hook)."""
    try:
        crds = read_crds(list(paths))
        with KubeCluster.from_kubeconfig(kubeconfig, context=context, component="kai-crd-upgrader") as cluster:
            applied = apply_crds(cluster, crds)
    except (CrdFileError, KubeconfigError, ApiError) as error:
        raise click.ClickException(str(error)) from error
    click.echo(f"applied {len(applied)} CRDs: {', '.join(applied)}")


GO_BOOL: dict[str, Any] = {"is_flag": False, "flag_value": "true", "default": "false", "type": click.BOOL}
"""A boolean flag as Go's pflag takes it: ``--flag``, ``--flag=true`` or ``--flag=false`` (KAI's operator writes
``--gpu-sharing-enabled=true``)."""


@main.command()
@click.option("--kubeconfig", type=click.Path(exists=True, dir_okay=False), help="Kubeconfig (default: in-cluster).")
@click.option("--context", help="Kubeconfig context.")
@click.option("--scheduler-name", default=names.SCHEDULER_NAME, show_default=True, help="Pods of this scheduler only.")
@click.option(
    "--webhook-addr", default="9443", show_default=True, help="Port (or HOST:PORT) of the HTTPS webhook server."
)
@click.option(
    "--cert-dir",
    type=click.Path(file_okay=False, path_type=Path),
    default=DEFAULT_CERT_DIR,
    show_default=True,
    help="Folder of tls.crt and tls.key; a change on disk is served from the next connection on.",
)
@click.option("--metrics-bind-address", default=":8080", show_default=True, help="HOST:PORT for /metrics (0 = off).")
@click.option(
    "--health-probe-bind-address", default=":8081", show_default=True, help="HOST:PORT for /healthz, /readyz."
)
@click.option(
    "--gpu-sharing-enabled", **GO_BOOL, help="Admit pods asking for a GPU fraction or GPU memory (=true/false)."
)
@click.option(
    "--gpu-fraction-runtime-class-name",
    default=None,
    help=f'Runtime class set on GPU-sharing pods that name none (default {DEFAULT_RUNTIME_CLASS}; "" = off).',
)
@click.option("--gpu-pod-runtime-class-name", default=None, help="Deprecated alias of the flag above (KAI's).")
@click.option(
    "--enable-quota-validation",
    is_flag=True,
    help="KAI's: warn when child queues' quotas exceed their parent's, refuse a child whose parent does not exist.",
)
@click.option(
    "--strict-validation",
    is_flag=True,
    help="kai's: refuse objects kai's scheduler cannot use (a missing parent queue, …); without it they are warnings.",
)
@click.option("--leader-elect", is_flag=True, help="Accepted for KAI's operator; every replica serves webhooks.")
@rate_limit_options()
def admission(
    kubeconfig: str | None,
    context: str | None,
    scheduler_name: str,
    webhook_addr: str,
    cert_dir: Path,
    metrics_bind_address: str,
    health_probe_bind_address: str,
    gpu_sharing_enabled: bool,
    gpu_fraction_runtime_class_name: str | None,
    gpu_pod_runtime_class_name: str | None,
    enable_quota_validation: bool,
    strict_validation: bool,
    leader_elect: bool,
    qps: float,
    burst: int,
) -> None:
    """Serve the admission webhooks: pod mutation and validation, Queue, PodGroup and Topology validation."""
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    logging.getLogger("httpx2").setLevel(logging.WARNING)
    runtime_class = next(
        (name for name in (gpu_fraction_runtime_class_name, gpu_pod_runtime_class_name) if name is not None),
        DEFAULT_RUNTIME_CLASS,
    )
    settings = AdmissionSettings(
        scheduler_name, gpu_sharing_enabled, runtime_class, enable_quota_validation, strict_validation
    )
    options = AdmissionOptions(
        settings,
        webhook_addr,
        cert_dir,
        metrics_bind_address,
        health_probe_bind_address,
        rate_limit=RateLimit(qps, burst),
    )
    try:
        serve_admission(options, kubeconfig, context)
    except (AdmissionError, EndpointError) as error:
        raise click.ClickException(str(error)) from error


for command in (doctor, explain, queues, snapshot):
    main.add_command(command)

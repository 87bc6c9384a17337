"""A live cluster as a scenario: what the scheduler sees there now, read through the kube adapter, with the
scheduler config it runs, for ``kai explain``, ``kai queues`` and ``kai snapshot``.

Nothing is written to the cluster. The config is the one given (``--scheduler-conf``), else the running
scheduler's (asked on its plugin server), else KAI's default, and the answer says which. The node pool is the one
given (``--partition-label-value``), else the running scheduler's, else the pool a scheduler started with the default
flags schedules: the objects without a node-pool label.
"""

import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kai.cluster.kube import ApiError, KubeCluster, KubeconfigError
from kai.cluster.port import Raw
from kai.cluster.yamlfile import YamlFileError, read_mapping
from kai.components.scheduler.capture import capture
from kai.components.scheduler.node_pool import NodePool
from kai.components.scheduler.plugin_client import Unreachable, fetch_json
from kai.components.scheduler.snapshot_format import config_from_kai, node_pool_of
from kai.components.shared.components import scheduler_kinds
from kai.components.sim.envelope import usable_objects
from kai.components.sim.scenario import Runner, Scenario
from kai.core.config import parse_config
from kai.core.framework.config import SchedulerConfig
from kai.core.model.errors import InvalidObject

SYNC_TIMEOUT_S = 60.0


class LiveError(RuntimeError):
    """The cluster, its kubeconfig or a config file cannot be used; one line saying which and why."""


@dataclass
class SchedulerSide:
    """The scheduler config to run, where it came from, and whether the running scheduler answered."""

    config: SchedulerConfig
    source: str
    address: str
    reachable: bool
    why_not: str = ""
    node_pool: NodePool | None = None
    """The shard to look at as its scheduler does; None: one pool of every object (a scheduler without shards)."""


def scheduler_side(scheduler_conf: Path | None, address: str, node_pool: NodePool | None = None) -> SchedulerSide:
    """``node_pool``: the one the user gave, which wins over the running scheduler's."""
    try:
        answer = fetch_json(address, "/get-cycles")
    except Unreachable as error:
        answer, why_not = None, str(error)
    else:
        why_not = ""
    answered = isinstance(answer, dict)
    try:
        if node_pool is None:
            node_pool = _answered_pool(answer, address) if isinstance(answer, dict) else NodePool()
        pool = node_pool.shard if node_pool is not None else None
        if scheduler_conf is not None:
            config = parse_config(read_mapping(scheduler_conf, "a scheduler config"))
            return SchedulerSide(config, str(scheduler_conf), address, answered, why_not, pool)
        if isinstance(answer, dict):
            merged, _ = config_from_kai(answer, f"the scheduler at {address}")
            return SchedulerSide(parse_config(merged), f"the scheduler at {address}", address, True, node_pool=pool)
    except (InvalidObject, YamlFileError, ValueError) as error:
        raise LiveError(str(error)) from error
    default = "KAI's default (no --scheduler-conf, no scheduler answered)"
    return SchedulerSide(parse_config({}), default, address, False, why_not, pool)


def _answered_pool(answer: dict[str, Any], address: str) -> NodePool | None:
    """The pool of the scheduler's ``/get-cycles`` answer (None: it has no shards)."""
    notes: list[tuple[str, str]] = []
    pool = node_pool_of(answer, notes)
    if notes:
        field, problem = notes[0]
        raise LiveError(f"the scheduler at {address}: field {field}: {problem}")
    return pool


def history(side: SchedulerSide, podgroup: str) -> dict[str, Any]:
    """What the running scheduler's last cycles did for ``podgroup``, or why that cannot be told."""
    if not side.reachable:
        return {"source": f"the scheduler at {side.address}", "unavailable": side.why_not, "cycles": []}
    try:
        answer = fetch_json(side.address, "/get-cycles", {"podgroup": podgroup})
    except Unreachable as error:
        return {"source": f"the scheduler at {side.address}", "unavailable": str(error), "cycles": []}
    return {"source": f"the scheduler at {side.address}", "cycles": answer.get("cycles", [])}


@contextmanager
def connect(kubeconfig: str | None, context: str | None, config: SchedulerConfig, watch: bool) -> Iterator[KubeCluster]:
    """The cluster; with ``watch``, its caches of the scheduler's kinds kept up to date (for repeated reads)."""
    try:
        cluster = KubeCluster.from_kubeconfig(
            kubeconfig, context=context, kinds=scheduler_kinds(config) if watch else ()
        )
    except KubeconfigError as error:
        raise LiveError(str(error)) from error
    try:
        if watch:
            cluster.start()
            if not cluster.wait_for_sync(SYNC_TIMEOUT_S):
                raise LiveError(f"the API server's objects could not be listed within {SYNC_TIMEOUT_S:.0f} s")
        yield cluster
    finally:
        cluster.close()


def read(cluster: KubeCluster, side: SchedulerSide, label: str) -> Scenario:
    """What the scheduler sees now, as a one-cycle scenario at the current time, run as the side's node pool."""
    if side.node_pool is not None:
        label = f"{label}, node pool {side.node_pool.name}"
    try:
        return as_scenario(capture(cluster, side.config), side.config, time.time(), label).in_pool(side.node_pool)
    except ApiError as error:
        raise LiveError(f"reading the cluster failed: {error}") from error


def as_scenario(objects: dict[str, list[Raw]], config: SchedulerConfig, now: float, label: str) -> Scenario:
    """Captured objects as a one-cycle scenario at ``now`` (``label`` says where they came from)."""
    entries: list[tuple[str, Any]] = [
        (f"{kind} {index}", obj) for kind, items in objects.items() for index, obj in enumerate(items)
    ]
    usable, problems = usable_objects(entries)
    return Scenario(Path(label), label, config, now, usable, {}, Runner(), problems, search_timer=time.perf_counter)

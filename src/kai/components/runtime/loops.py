"""Running components in one process: the scheduler loop, the binder and the status controllers, each on its own
thread over one cluster connection, with a shared Prometheus registry (served by ``endpoints``).

``kai all`` runs them all (with the pod-grouper); ``kai scheduler`` / ``kai binder`` / ``kai controllers`` /
``kai podgrouper`` run one each, and ``kai podgroup-controller`` / ``kai queue-controller`` split the controllers as
KAI's install does (the queue-controller then sums the PodGroups' status instead of their pods). Loops wake up on
the object events that concern them (a new BindRequest wakes the binder at once) or after their period.
"""

import logging
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from prometheus_client import CollectorRegistry

from kai.cluster.port import ClusterClient, ClusterError
from kai.components.binder.component import Binder
from kai.components.controllers import (
    PodGroupStatusController,
    QueueStatusController,
    StatusTotals,
    ensure_default_queues,
)
from kai.components.podgrouper import PodGrouper, Settings
from kai.components.scheduler.loop import SchedulerLoop
from kai.components.scheduler.node_pool import NodePool
from kai.components.shared.endpoints import Health
from kai.components.shared.metrics import BinderMetrics, SchedulerMetrics
from kai.components.shared.parallel import Writes
from kai.core.framework.config import SchedulerConfig
from kai.core.model import names

log = logging.getLogger(__name__)
WAKE_ON = {"binder": {"BindRequest"}, "podgrouper": {"Pod", "PodGroup"}}
"""Loops woken at once by these kinds of change. The status controllers take in the changes once a period (a pass
costs what changed since the last): woken by changes, their own writes would wake them again and again, and a
PodGroup status settles over passes (``PodGroupStatusController``)."""


@dataclass
class RuntimeOptions:
    config: SchedulerConfig = field(default_factory=SchedulerConfig)
    schedule_period_s: float = 1.0
    binder_period_s: float = 1.0
    controllers_period_s: float = 2.0
    metrics_bind_address: str = ":8080"
    health_probe_bind_address: str = ":8081"
    plugin_server_port: int = 0
    """The scheduler's plugin server on 127.0.0.1 (0 = off)."""
    write_workers: int = 1
    """The scheduler's independent writes issued side by side (16 against an API server; 1 for the in-memory
    cluster)."""
    max_concurrent_reconciles: int = 1
    """Objects the binder, the pod-grouper and the status controllers each work on at once (KAI's
    ``--max-concurrent-reconciles``, 10 against an API server; 1 for the in-memory cluster)."""
    node_pool: NodePool = field(default_factory=NodePool)
    """The scheduler's shard: the node-pool label and the value its nodes, queues and PodGroups carry."""
    grouping: Settings = field(default_factory=Settings)
    """The pod-grouper's options (queue and node-pool label keys, Knative gangs, default-priorities ConfigMap)."""
    reservation_namespace: str = names.RESERVATION_NAMESPACE
    """Where the binder keeps GPU reservation pods (KAI's ``--resource-reservation-namespace``)."""


def _loop(
    name: str,
    step: Callable[[], Any],
    period_s: float,
    wake: threading.Event,
    stop: threading.Event,
    setup: Callable[[], Any] | None = None,
) -> None:
    """``setup`` once (on the loop's thread, so that it delays no other component), then ``step`` every period."""
    try:
        if setup is not None:
            setup()
    except Exception:  # the loop runs all the same
        log.exception("%s setup failed", name)
    while not stop.is_set():
        wake.clear()
        try:
            step()
        except ClusterError as error:  # the API server's answer (after the client's retries): one line
            log.error("%s pass failed: %s", name, error)
        except Exception:  # one failed pass is logged; the component keeps running
            log.exception("%s pass failed", name)
        wake.wait(period_s)
        if stop.is_set():
            return


def run(
    cluster: ClusterClient,
    components: set[str],
    options: RuntimeOptions,
    stop: threading.Event,
    registry: CollectorRegistry | None = None,
    health: Health | None = None,
    on_scheduler: Callable[[SchedulerLoop], None] | None = None,
) -> None:
    """Run the named components until ``stop`` is set; their metrics go to ``registry``, ``health`` learns
    whether their loops have started (readiness) and are alive, and ``on_scheduler`` gets the scheduler loop once it
    exists."""
    registry = registry if registry is not None else CollectorRegistry()
    started = threading.Event()
    if health is not None:  # not ready while the components build their state from the caches (a minute at scale)
        health.readiness["loops"] = lambda: (True, "started") if started.is_set() else (False, "starting")
    reconciles = options.max_concurrent_reconciles
    wakes = {name: threading.Event() for name in components}

    def on_change(kind: str, _obj: Mapping[str, Any], _deleted: bool) -> None:
        for name, kinds in WAKE_ON.items():
            if name in wakes and kind in kinds:
                wakes[name].set()

    def wake_all_on_stop() -> None:
        stop.wait()
        for wake in wakes.values():
            wake.set()

    cluster.subscribe(on_change)
    threading.Thread(target=wake_all_on_stop, daemon=True).start()
    threads: list[threading.Thread] = []
    if "controllers" in components:
        ensure_default_queues(cluster)
        writes = Writes(reconciles)
        podgroups = PodGroupStatusController(cluster, writes, settle=True)
        queues = QueueStatusController(cluster, podgroups, registry, options.config.metrics_namespace, writes)

        def controllers_pass() -> None:
            podgroups.reconcile()
            queues.reconcile()

        period = options.controllers_period_s
        threads.append(_thread("controllers", controllers_pass, period, wakes["controllers"], stop))
    if "podgroup-controller" in components:
        podgroup_status = PodGroupStatusController(cluster, Writes(reconciles), settle=True)
        period = options.controllers_period_s
        threads.append(
            _thread("podgroup-controller", podgroup_status.reconcile, period, wakes["podgroup-controller"], stop)
        )
    if "queue-controller" in components:
        queue_status = QueueStatusController(
            cluster, StatusTotals(cluster), registry, options.config.metrics_namespace, Writes(reconciles)
        )
        period = options.controllers_period_s
        threads.append(_thread("queue-controller", queue_status.reconcile, period, wakes["queue-controller"], stop))
    if "podgrouper" in components:
        grouper = PodGrouper(cluster, options.config.scheduler_name, Writes(reconciles), options.grouping)
        threads.append(_thread("podgrouper", grouper.reconcile, options.binder_period_s, wakes["podgrouper"], stop))
    if "binder" in components:
        binder = Binder(
            cluster,
            time.time,
            Writes(reconciles),
            reservation_namespace=options.reservation_namespace,
            metrics=BinderMetrics(registry),
        )
        period = options.binder_period_s
        threads.append(_thread("binder", binder.reconcile, period, wakes["binder"], stop, setup=binder.start))
    if "scheduler" in components:
        metrics = SchedulerMetrics(registry, options.config.metrics_namespace)
        loop = SchedulerLoop(
            cluster, options.config, metrics, writes=Writes(options.write_workers), node_pool=options.node_pool
        )
        if on_scheduler is not None:
            on_scheduler(loop)
        threads.append(_thread("scheduler", loop.run_once, options.schedule_period_s, wakes["scheduler"], stop))
    for thread in threads:
        thread.start()
    if health is not None:
        health.liveness["loops"] = lambda: _alive(threads)
    started.set()
    stop.wait()
    for thread in threads:
        thread.join(timeout=10)


def _alive(threads: list[threading.Thread]) -> tuple[bool, str]:
    dead = [t.name for t in threads if not t.is_alive()]
    if dead:
        return False, f"stopped: {', '.join(dead)}"
    return True, f"running: {', '.join(t.name for t in threads)}"


def _thread(
    name: str,
    step: Callable[[], Any],
    period_s: float,
    wake: threading.Event,
    stop: threading.Event,
    setup: Callable[[], Any] | None = None,
) -> threading.Thread:
    args = (name, step, period_s, wake, stop, setup)
    return threading.Thread(target=_loop, args=args, name=f"kai-{name}", daemon=True)

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
from kai.components.shared.components import COMPONENTS
from kai.components.shared.endpoints import Health
from kai.components.shared.metrics import BinderMetrics, SchedulerMetrics
from kai.components.shared.parallel import Writes
from kai.core.framework.config import SchedulerConfig
from kai.core.model import names

log = logging.getLogger(__name__)


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


@dataclass(frozen=True)
class Wiring:
    """What a component's loop is made of."""

    cluster: ClusterClient
    options: RuntimeOptions
    registry: CollectorRegistry
    on_scheduler: Callable[[SchedulerLoop], None] | None

    def writes(self) -> Writes:
        return Writes(self.options.max_concurrent_reconciles)


Loop = tuple[Callable[[], Any], float, Callable[[], Any] | None]
"""A component's loop: its pass, its period and what it sets up once on its thread."""


def _loop(name: str, loop: Loop, wake: threading.Event, stop: threading.Event) -> None:
    """``setup`` once (on the loop's thread, so that it delays no other component), then ``step`` every period."""
    step, period_s, setup = loop
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


def _controllers(w: Wiring) -> Loop:
    """Both status controllers in one pass (the queues' status sums the PodGroups' status of the same pass). The
    controllers take in the changes once a period (a pass costs what changed since the last): woken by changes, their
    own writes would wake them again and again, and a PodGroup status settles over passes."""
    ensure_default_queues(w.cluster)
    writes = w.writes()
    podgroups = PodGroupStatusController(w.cluster, writes, settle=True)
    queues = QueueStatusController(w.cluster, podgroups, w.registry, w.options.config.metrics_namespace, writes)

    def controllers_pass() -> None:
        podgroups.reconcile()
        queues.reconcile()

    return controllers_pass, w.options.controllers_period_s, None


def _podgroup_controller(w: Wiring) -> Loop:
    podgroups = PodGroupStatusController(w.cluster, w.writes(), settle=True)
    return podgroups.reconcile, w.options.controllers_period_s, None


def _queue_controller(w: Wiring) -> Loop:
    """Apart from the podgroup-controller, the queues' status sums the PodGroups' status (``StatusTotals``)."""
    namespace = w.options.config.metrics_namespace
    queues = QueueStatusController(w.cluster, StatusTotals(w.cluster), w.registry, namespace, w.writes())
    return queues.reconcile, w.options.controllers_period_s, None


def _podgrouper(w: Wiring) -> Loop:
    grouper = PodGrouper(w.cluster, w.options.config.scheduler_name, w.writes(), w.options.grouping)
    return grouper.reconcile, w.options.binder_period_s, None


def _binder(w: Wiring) -> Loop:
    binder = Binder(
        w.cluster,
        time.time,
        w.writes(),
        reservation_namespace=w.options.reservation_namespace,
        metrics=BinderMetrics(w.registry),
    )
    return binder.reconcile, w.options.binder_period_s, binder.start


def _scheduler(w: Wiring) -> Loop:
    metrics = SchedulerMetrics(w.registry, w.options.config.metrics_namespace)
    writes = Writes(w.options.write_workers)
    loop = SchedulerLoop(w.cluster, w.options.config, metrics, writes=writes, node_pool=w.options.node_pool)
    if w.on_scheduler is not None:
        w.on_scheduler(loop)
    return loop.run_once, w.options.schedule_period_s, None


LOOPS: dict[str, Callable[[Wiring], Loop]] = {
    "controllers": _controllers,
    "podgroup-controller": _podgroup_controller,
    "queue-controller": _queue_controller,
    "podgrouper": _podgrouper,
    "binder": _binder,
    "scheduler": _scheduler,
}
"""How each component of ``shared.components`` that runs as a loop is made, in the order they are made."""


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
    wakes = {name: threading.Event() for name in components}

    def on_change(kind: str, _obj: Mapping[str, Any], _deleted: bool) -> None:
        for name in woken_by(kind, components):
            wakes[name].set()

    def wake_all_on_stop() -> None:
        stop.wait()
        for wake in wakes.values():
            wake.set()

    cluster.subscribe(on_change)
    threading.Thread(target=wake_all_on_stop, daemon=True).start()
    wiring = Wiring(cluster, options, registry, on_scheduler)
    threads = []
    for name, build in LOOPS.items():
        if name in components:
            threads.append(_thread(name, build(wiring), wakes[name], stop))
    for thread in threads:
        thread.start()
    if health is not None:
        health.liveness["loops"] = lambda: _alive(threads)
    started.set()
    stop.wait()
    for thread in threads:
        thread.join(timeout=10)


def woken_by(kind: str, running: set[str]) -> set[str]:
    """The running components whose loop a change of ``kind`` wakes at once (``Component.wakes_on``)."""
    return {name for name in running if kind in COMPONENTS[name].wakes_on}


def _alive(threads: list[threading.Thread]) -> tuple[bool, str]:
    dead = [t.name for t in threads if not t.is_alive()]
    if dead:
        return False, f"stopped: {', '.join(dead)}"
    return True, f"running: {', '.join(t.name for t in threads)}"


def _thread(name: str, loop: Loop, wake: threading.Event, stop: threading.Event) -> threading.Thread:
    return threading.Thread(target=_loop, args=(name, loop, wake, stop), name=f"kai-{name}", daemon=True)

"""Serving components against an API server: open the endpoints, connect, sync the caches, optionally win the
Lease, then run.

The metrics and probe endpoints answer from the first second, so a kubelet sees the truth while the process syncs:
``/readyz`` fails until every informer has listed its kind, and says whether this replica leads or stands by.
With leader election, a replica waits until it holds the Lease and exits when it loses it (the replica set then
restarts it as a candidate), so two replicas never schedule or bind at the same time.
"""

import logging
import signal
import socket
import threading
import time
import uuid
from collections.abc import Callable

from prometheus_client import CollectorRegistry

from kai.cluster.kube.client import KubeCluster
from kai.cluster.kube.kubeconfig import KubeconfigError
from kai.cluster.kube.leader import LeaderElector
from kai.cluster.kube.ratelimit import UNLIMITED, RateLimit
from kai.components.runtime.loops import RuntimeOptions, run
from kai.components.scheduler.loop import SchedulerLoop
from kai.components.scheduler.plugin_server import PluginServer
from kai.components.shared.components import kinds_for
from kai.components.shared.endpoints import Endpoints, Health
from kai.components.shared.metrics import RestClientMetrics

log = logging.getLogger(__name__)
SYNC_TIMEOUT_S = 120.0


class ServeError(RuntimeError):
    pass


def _synced(cluster: KubeCluster) -> tuple[bool, str]:
    waiting = sorted(kind for kind, informer in cluster.informers.items() if not informer.synced.is_set())
    if waiting:
        return False, f"not synced yet: {', '.join(waiting)}"
    return True, f"synced: {', '.join(sorted(cluster.informers))}"


def _leadership(elector: LeaderElector, lease: str) -> tuple[bool, str]:
    if elector.is_leader:
        return True, f"leading (Lease {lease})"
    holder = elector.holder
    return True, f"standby (Lease {lease} held by {holder})" if holder else f"standby (Lease {lease})"


Body = Callable[[KubeCluster, threading.Event, CollectorRegistry, Health], None]
"""What runs once the caches are synced (and the Lease is held): until the stop event is set."""


def serve(
    components: set[str],
    options: RuntimeOptions,
    kubeconfig: str | None = None,
    context: str | None = None,
    leader_elect: bool = False,
    lease_namespace: str = "kai-scheduler",
    lease_name: str = "kai-scheduler",
    rate_limit: RateLimit = UNLIMITED,
) -> None:
    """Runs ``components`` (``serve_body``); a scheduler's plugin server opens first, so a taken port stops the
    process at start, and answers 503 until the scheduler loop is attached."""
    kinds = sorted(kinds_for(components, options.config))
    plugin_server = (
        PluginServer(options.plugin_server_port) if "scheduler" in components and options.plugin_server_port else None
    )

    def body(cluster: KubeCluster, stop: threading.Event, registry: CollectorRegistry, health: Health) -> None:
        def attach(loop: SchedulerLoop) -> None:
            if plugin_server is not None:
                plugin_server.attach(loop, cluster)

        run(cluster, components, options, stop, registry, health, attach)

    try:
        serve_body(
            kinds,
            body,
            options.metrics_bind_address,
            options.health_probe_bind_address,
            kubeconfig,
            context,
            leader_elect,
            lease_namespace,
            lease_name,
            rate_limit,
        )
    finally:
        if plugin_server is not None:
            plugin_server.close()


def serve_body(
    kinds: list[str],
    body: Body,
    metrics_bind_address: str,
    health_probe_bind_address: str,
    kubeconfig: str | None,
    context: str | None,
    leader_elect: bool,
    lease_namespace: str,
    lease_name: str,
    rate_limit: RateLimit = UNLIMITED,
) -> None:
    """Connects with informers on ``kinds`` (its requests within ``rate_limit``), serves the endpoints, waits for the
    sync and the Lease, runs ``body``."""
    stop = threading.Event()
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, lambda *_: stop.set())
    try:
        cluster = KubeCluster.from_kubeconfig(
            kubeconfig,
            context=context,
            kinds=kinds,
            component=lease_name,
            rate_limit=rate_limit,
        )
    except KubeconfigError as error:
        raise ServeError(str(error)) from error
    registry, health = CollectorRegistry(), Health()
    registry.register(RestClientMetrics(cluster.request_counts, cluster.server, cluster.rate_limit_waits))
    health.readiness["informers"] = lambda: _synced(cluster)
    endpoints: Endpoints | None = None
    elector: LeaderElector | None = None
    try:
        endpoints = Endpoints(metrics_bind_address, health_probe_bind_address, registry, health)
        cluster.start()
        deadline = time.monotonic() + SYNC_TIMEOUT_S
        while not cluster.wait_for_sync(0.5):  # a SIGTERM while the API server is away still stops the process
            if stop.is_set():
                return
            if time.monotonic() > deadline:
                raise ServeError(f"the API server's objects could not be listed within {SYNC_TIMEOUT_S:.0f} s")
        if leader_elect:
            leading = threading.Event()
            identity = f"{socket.gethostname()}-{uuid.uuid4().hex[:8]}"
            elector = LeaderElector(
                cluster,
                namespace=lease_namespace,
                name=lease_name,
                identity=identity,
                on_started_leading=leading.set,
                on_stopped_leading=stop.set,
            )
            lease, campaign = f"{lease_namespace}/{lease_name}", elector
            health.readiness["leader"] = lambda: _leadership(campaign, lease)
            elector.start()
            log.info("%s waits for the Lease %s/%s", identity, lease_namespace, lease_name)
            while not leading.wait(0.5):
                if stop.is_set():
                    return
            log.info("%s leads", identity)
        body(cluster, stop, registry, health)
    finally:
        if elector is not None:
            elector.stop()
        cluster.close()
        if endpoints is not None:
            endpoints.close()

"""Serving components against an API server: connect, sync the caches, optionally win the Lease, then run.

With leader election, a replica waits until it holds the Lease and exits when it loses it (the replica set then
restarts it as a candidate), so two replicas never schedule or bind at the same time.
"""

import logging
import signal
import socket
import threading
import uuid

from kai.cluster.kube.client import KubeCluster
from kai.cluster.kube.leader import LeaderElector
from kai.components.runtime import RuntimeOptions, kinds_for, run

log = logging.getLogger(__name__)
SYNC_TIMEOUT_S = 120.0


class ServeError(RuntimeError):
    pass


def serve(
    components: set[str],
    options: RuntimeOptions,
    kubeconfig: str | None = None,
    context: str | None = None,
    leader_elect: bool = False,
    lease_namespace: str = "kai-scheduler",
    lease_name: str = "kai-scheduler",
) -> None:
    stop = threading.Event()
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, lambda *_: stop.set())
    kinds = sorted(kinds_for(components, options.config.feature_gates.get("DynamicResourceAllocation", False)))
    cluster = KubeCluster.from_kubeconfig(kubeconfig, context=context, kinds=kinds, component=lease_name)
    cluster.start()
    elector: LeaderElector | None = None
    try:
        if not cluster.wait_for_sync(SYNC_TIMEOUT_S):
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
            elector.start()
            log.info("%s waits for the Lease %s/%s", identity, lease_namespace, lease_name)
            while not leading.wait(0.5):
                if stop.is_set():
                    return
            log.info("%s leads", identity)
        run(cluster, components, options, stop)
    finally:
        if elector is not None:
            elector.stop()
        cluster.close()

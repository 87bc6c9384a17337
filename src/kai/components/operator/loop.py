"""The operator's loop: a reconcile pass when a Config or SchedulingShard changes, and at least every period. A pass
that did not settle (a Deployment not available yet, a write refused) is looked at again sooner: after 0.5 s,
doubling up to the period, so the conditions tell a Deployment became available within about the time it took.
Objects deleted or edited by hand are repaired at the reconciler's resync, every 5 minutes, or when the operator
restarts: it does not watch what it owns (KAI's operator does)."""

import logging
import threading
from collections.abc import Mapping
from typing import Any, Protocol

from kai.cluster.port import Listener
from kai.components.operator.reconciler import InstallCluster, Reconciler
from kai.components.operator.settings import Image
from kai.components.shared.components import COMPONENTS

log = logging.getLogger(__name__)
WATCHED = COMPONENTS["operator"].watches
FIRST_RETRY_S = 0.5


class WatchedCluster(InstallCluster, Protocol):
    def subscribe(self, listener: Listener) -> None: ...


def operate(cluster: WatchedCluster, image: Image, period_s: float, stop: threading.Event) -> None:
    """Reconciles until ``stop`` is set."""
    reconciler = Reconciler(cluster, image)
    wake = threading.Event()

    def on_change(kind: str, _obj: Mapping[str, Any], _deleted: bool) -> None:
        if kind in WATCHED:
            wake.set()

    cluster.subscribe(on_change)

    def wake_on_stop() -> None:
        stop.wait()
        wake.set()

    threading.Thread(target=wake_on_stop, daemon=True).start()
    soon_s = FIRST_RETRY_S
    while not stop.is_set():
        wake.clear()
        try:
            settled = reconciler.reconcile()
        except Exception:  # a failed pass is logged; the next one starts from the objects as they are
            log.exception("operator pass failed")
            settled = False
        woken = wake.wait(period_s if settled else min(soon_s, period_s))
        soon_s = FIRST_RETRY_S if settled or woken else min(2 * soon_s, period_s)  # a change starts the doubling again

"""The scheduling loop (KAI's scheduler.go): every period, snapshot → cycle → write decisions → metrics.

Object events arrive from the cluster port on another thread; a lock keeps them out while a snapshot is taken,
so a cycle sees one consistent state. Invalid objects are logged once each, by name, and otherwise ignored.
"""

import logging
import threading
import time
from collections.abc import Callable, Mapping
from typing import Any

from kai.cluster.port import ClusterClient
from kai.components.metrics import SchedulerMetrics
from kai.components.parallel import Writes
from kai.components.scheduler.writer import DecisionWriter
from kai.core.cycle import run_cycle
from kai.core.framework.config import SchedulerConfig
from kai.core.framework.session import Session
from kai.core.state.cluster_state import ClusterState
from kai.core.state.snapshot import take_snapshot

log = logging.getLogger(__name__)


class SchedulerLoop:
    def __init__(
        self,
        cluster: ClusterClient,
        config: SchedulerConfig,
        metrics: SchedulerMetrics | None = None,
        clock: Callable[[], float] = time.time,
        writes: Writes | None = None,
    ) -> None:
        self.config = config
        self.metrics = metrics
        self.clock = clock
        self.state = ClusterState()
        self.writer = DecisionWriter(cluster, clock, writes)
        self._lock = threading.Lock()
        self._reported: set[tuple[str, str]] = set()
        cluster.subscribe(self._on_change)

    def _on_change(self, kind: str, obj: Mapping[str, Any], deleted: bool) -> None:
        with self._lock:
            error = self.state.apply(kind, obj, deleted)
        if error is not None:
            log.warning("ignoring invalid object: %s", error)

    def run_once(self) -> Session:
        started = time.perf_counter()
        with self._lock:
            cluster = take_snapshot(self.state, self.config.scheduler_name)
            invalid = dict(self.state.invalid)
        for key, error in invalid.items():
            if key not in self._reported:
                self._reported.add(key)
                log.warning("skipping invalid %s %s: %s", key[0], key[1], error)
        session = run_cycle(cluster, self.config, self.clock(), time.perf_counter)
        self.writer.write(session.result)
        if self.metrics is not None:
            self.metrics.observe(session, (time.perf_counter() - started) * 1000)
        return session

    def run(self, period_s: float, stop: threading.Event) -> None:
        while not stop.is_set():
            try:
                self.run_once()
            except Exception:  # a failed cycle is logged; the next one starts from fresh state
                log.exception("scheduling cycle failed")
            stop.wait(period_s)

"""The scheduling loop (KAI's scheduler.go): every period, snapshot → cycle → write decisions → metrics.

Object events arrive from the cluster port on another thread; a lock keeps them out while a snapshot is taken,
so a cycle sees one consistent state. Invalid objects are skipped, and reported once each on the object itself
(``invalid``). With time-based fair share, each cycle reads the queues' usage and records what they hold
(``usage``). The last cycles' results are kept (``history``) for the plugin server.

Each cycle's snapshot is built from the last (``Snapshots``): its tasks, jobs and node accounting live as long as the
process, so the first one's are frozen out of the cyclic GC, as an informer's first list is (docs/architecture.md §7):
at 140,000 pods every full collection walked them again, a 1.5 s pause every few cycles. So are, at the second cycle,
what the first one left to live as long (the writer's and the event recorder's records of the waiting pods, some
270,000 objects at that scale, which a full collection in every cycle walked again: 0.3 s of a 1.1 s cycle). A job
the snapshots drop has its reference cycles broken, so it is freed all the same.
"""

import dataclasses
import gc
import logging
import threading
import time
from collections.abc import Callable, Mapping
from typing import Any

from kai.cluster.port import ClusterClient
from kai.components.scheduler.history import CycleHistory
from kai.components.scheduler.in_flight import BindRequestsInFlight
from kai.components.scheduler.invalid import InvalidObjectReporter
from kai.components.scheduler.node_pool import NodePool
from kai.components.scheduler.usage import UsageSource, cycle_with_usage, usage_source
from kai.components.scheduler.writer import COMPONENT, DecisionWriter
from kai.components.shared.events import EventRecorder
from kai.components.shared.metrics import SchedulerMetrics
from kai.components.shared.parallel import Writes
from kai.core.cycle import open_session
from kai.core.framework.config import SchedulerConfig
from kai.core.framework.session import Session
from kai.core.state.cluster_state import ClusterState
from kai.core.state.snapshot import Snapshots, take_snapshot

log = logging.getLogger(__name__)
ASSUME_S = 120.0
"""How long a BindRequest this scheduler created counts while its informer does not show it."""
HOLD_S = 30.0
"""How long a deleted BindRequest counts while its pod is not shown bound."""
EVENT_KEYS = 65_536
"""The event recorder's cache sizes: every waiting pod and podgroup is reported every cycle, and an event that
left the caches since the last cycle becomes a new Event (client-go's 4,096 is below KAI's field scale; see
docs/deviations.md)."""


class SchedulerLoop:
    def __init__(
        self,
        cluster: ClusterClient,
        config: SchedulerConfig,
        metrics: SchedulerMetrics | None = None,
        clock: Callable[[], float] = time.time,
        writes: Writes | None = None,
        usage: UsageSource | None = None,
        node_pool: NodePool | None = None,
    ) -> None:
        """``usage``: where queues' historical usage comes from (default: what ``config.usage_db`` names)."""
        self.node_pool = node_pool or NodePool()
        self.config = dataclasses.replace(config, node_pool=self.node_pool.name)
        self.metrics = metrics
        self.clock = clock
        self.state = ClusterState()
        self.snapshots = Snapshots(
            self.state, config.scheduler_name, full_hierarchy_fairness=config.full_hierarchy_fairness
        )
        """Each cycle's snapshot, built from the last one (a cycle's snapshot is valid until the next cycle)."""
        self._lock = threading.Lock()
        self.in_flight = BindRequestsInFlight(self.state, self._lock, clock, ASSUME_S, HOLD_S)
        writes = writes or Writes()
        recorder = EventRecorder(cluster, COMPONENT, clock, cache_size=EVENT_KEYS, writes=writes)
        self.writer = DecisionWriter(
            cluster,
            clock,
            writes,
            recorder,
            on_bind_request=self.in_flight.created,
            node_pool=self.node_pool,
            on_bind_ms=metrics.task_bind_latency.observe if metrics is not None else None,
            through_eviction_api=config.disruption.pod_disruption_budgets,
        )
        self.invalid = InvalidObjectReporter(cluster, recorder, clock, writes, self.node_pool.pool_of)
        on_query = metrics.usage_query_latency.observe if metrics is not None else None
        self.usage = usage or usage_source(config.usage_db, cluster, config.scheduler_name, on_query)
        self.cycles = 0
        self.pipelined: Mapping[str, tuple[str, ...]] = {}
        """Podgroups the last cycle pipelined (allocate tries them first next cycle)."""
        self.history = CycleHistory()
        cluster.subscribe(self._on_change)

    def _on_change(self, kind: str, obj: Mapping[str, Any], deleted: bool) -> None:
        with self._lock:
            if self.in_flight.apply(kind, obj, deleted):
                self.state.apply(kind, obj, deleted, elsewhere=not self.node_pool.schedules(kind, obj))

    def run_once(self) -> Session:
        started = time.perf_counter()
        now = self.clock()
        with self._lock:
            self.in_flight.expire()
            cluster = self.snapshots.take(now, self.config.stuck_in_releasing_s)
            if self.cycles < 2:
                if self.cycles:
                    gc.collect()  # the first cycle's garbage is not frozen
                gc.freeze()  # see the module docstring
            invalid = dict(self.state.invalid)
            warnings = dict(self.state.warnings)
        cluster.pipelined_before = self.pipelined
        cluster.recent_evictions = self.writer.evictor.recent(now)
        session = cycle_with_usage(self.usage, cluster, self.config, now, time.perf_counter)
        self.pipelined = session.result.pipelined_podgroups()
        self.cycles += 1
        self.history.add(self.cycles, now, session.result)
        # one dict (the session's job where both have one): the writer scans every job, slowly through a ChainMap
        self.writer.write(session.result, {**session.cluster.unschedulable_jobs, **session.jobs})
        self.invalid.report(invalid, warnings)
        if self.metrics is not None:
            self.metrics.observe(session, (time.perf_counter() - started) * 1000, self.writer.evictor.last.outcomes())
        return session

    def opened_session(self) -> Session:
        """A session opened on the state as it is now, before any action: what the next cycle starts from (on a
        snapshot of its own: the cycles' snapshots are reused)."""
        now = self.clock()
        with self._lock:
            config = self.config
            cluster = take_snapshot(
                self.state, config.scheduler_name, now, config.stuck_in_releasing_s, config.full_hierarchy_fairness
            )
        if self.usage is not None:
            cluster.queue_usage = self.usage.read(now)
        return open_session(cluster, self.config, now)

    def run(self, period_s: float, stop: threading.Event) -> None:
        while not stop.is_set():
            try:
                self.run_once()
            except Exception:  # a failed cycle is logged; the next one starts from fresh state
                log.exception("scheduling cycle failed")
            stop.wait(period_s)

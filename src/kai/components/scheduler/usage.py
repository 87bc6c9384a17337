"""Where the scheduler loop gets queues' historical usage each cycle, and what it tells the usage store.

As in KAI (``cache/usagedb.UsageLister``) the cycle never waits for usage: it reads the last value, refreshed every
``fetchInterval``. ``BuiltinUsage`` computes it from the usage store the loop feeds with each cycle's allocations
(and persists that store's history); ``PrometheusUsage`` fetches it from Prometheus on a thread of its own, waits
up to ``waitTimeout`` for the first answer, and keeps using the last one when a fetch fails (a warning once it is
older than ``stalenessPeriod``).
"""

import logging
import os
import threading
import time
from collections.abc import Callable
from typing import Protocol

from kai.cluster.port import ClusterClient
from kai.cluster.prometheus import PrometheusUsageClient, UsageQueryError
from kai.components.scheduler.usage_history import ConfigMapHistory
from kai.core.cycle import run_cycle
from kai.core.framework.config import SchedulerConfig
from kai.core.framework.session import Session
from kai.core.framework.usage.usage_config import CLIENT_BUILTIN, UsageDBConfig, UsageParams
from kai.core.framework.usage.usage_store import AllocationSample, Quantities, UsageStore
from kai.core.state.snapshot import ClusterInfo

log = logging.getLogger(__name__)
SCHEDULER_NAMESPACE = "kai-scheduler"

Usage = dict[str, Quantities]
QueryObserver = Callable[[float], None]
"""Called with how long a usage query took, in milliseconds (KAI's usage_query_latency_milliseconds)."""


class UsageError(ValueError):
    """The usage source cannot be set up (a connection string that names nothing usable)."""


class UsageSource(Protocol):
    def read(self, now: float) -> Usage: ...

    def record(self, now: float, sample: AllocationSample) -> None: ...


class BuiltinUsage:
    """The builtin source: usage from the store of what the scheduler allocated, recomputed every fetchInterval;
    the store's history saved (``history``) at most as often."""

    def __init__(
        self,
        params: UsageParams,
        history: ConfigMapHistory | None = None,
        on_query: QueryObserver | None = None,
    ) -> None:
        self.params = params
        self.history = history
        self.on_query = on_query
        self.store = UsageStore(params)
        restored = history.load() if history is not None else None
        if history is not None and restored is not None:
            self.store = UsageStore.restore(params, restored)
            log.info("usage history restored from ConfigMap %s (%d queues)", history.key, len(restored.queues))
        self._usage: Usage = {}
        self._read_at: float | None = None
        self._saved_at: float | None = None

    def read(self, now: float) -> Usage:
        if self._read_at is None or now - self._read_at >= self.params.fetch_interval_s or now < self._read_at:
            started = time.perf_counter()
            self._usage = self.store.usage(now)
            self._read_at = now
            if self.on_query is not None:
                self.on_query((time.perf_counter() - started) * 1000)
        return self._usage

    def record(self, now: float, sample: AllocationSample) -> None:
        self.store.record(now, sample)
        if self.history is None:
            return
        if self._saved_at is None or now - self._saved_at >= self.params.fetch_interval_s:
            self.history.save(self.store.history())
            self._saved_at = now


class PrometheusUsage:
    """Usage fetched from Prometheus every fetchInterval on a daemon thread; the loop reads the latest."""

    def __init__(
        self,
        client: PrometheusUsageClient,
        clock: Callable[[], float] = time.time,
        on_query: QueryObserver | None = None,
    ) -> None:
        self.client = client
        self.params = client.params
        self.clock = clock
        self.on_query = on_query
        self._usage: Usage = {}
        self._fetched_at: float | None = None
        self._first = threading.Event()
        self._stop = threading.Event()
        self._stale_reported = False
        self._waited = False
        self._thread = threading.Thread(target=self._run, name="kai-usage", daemon=True)
        self._thread.start()

    def read(self, now: float) -> Usage:
        if not self._waited:
            self._waited = True
            if not self._first.wait(self.params.wait_timeout_s):
                log.warning(
                    "usage data fetch timed out after %.0f s; scheduling without usage", self.params.wait_timeout_s
                )
        fetched_at = self._fetched_at
        stale = fetched_at is not None and now - fetched_at > self.params.staleness_s
        if stale and not self._stale_reported:
            log.warning(
                "usage data is stale: last update %.0f s ago (stalenessPeriod %.0f s); still used",
                now - (fetched_at or now),
                self.params.staleness_s,
            )
        self._stale_reported = stale
        return self._usage

    def record(self, now: float, sample: AllocationSample) -> None:
        """Prometheus keeps the history (from the queue controller's metrics); nothing to record here."""

    def close(self) -> None:
        self._stop.set()
        self._thread.join(timeout=self.params.query_timeout_s + 1)

    def _run(self) -> None:
        while not self._stop.is_set():
            self._fetch()
            self._stop.wait(self.params.fetch_interval_s)

    def _fetch(self) -> None:
        started, now = time.perf_counter(), self.clock()
        try:
            usage = self.client.query_usage(now)
        except UsageQueryError as error:
            log.error("failed to fetch usage data: %s", error)
            return
        if self.on_query is not None:
            self.on_query((time.perf_counter() - started) * 1000)
        self._usage, self._fetched_at = usage, now
        self._first.set()


def history_configmap(config: UsageDBConfig, scheduler_name: str) -> str:
    """``namespace/name`` of the ConfigMap the builtin store keeps its history in."""
    return config.connection_string or f"{SCHEDULER_NAMESPACE}/{scheduler_name}-usage"


def usage_source(
    config: UsageDBConfig | None,
    cluster: ClusterClient,
    scheduler_name: str,
    on_query: QueryObserver | None = None,
) -> UsageSource | None:
    """The source ``usageDBConfig`` asks for (None: time-based fair share is off)."""
    if config is None:
        return None
    if config.client_type == CLIENT_BUILTIN:
        namespace, _, name = history_configmap(config, scheduler_name).partition("/")
        return BuiltinUsage(config.params, ConfigMapHistory(cluster, namespace, name), on_query)
    url = config.connection_string
    if config.connection_string_env_var:
        url = os.environ.get(config.connection_string_env_var, "")
        if not url:
            raise UsageError(
                f"scheduler config: field usageDBConfig.connectionStringEnvVar: "
                f"environment variable {config.connection_string_env_var!r} is not set"
            )
    try:
        return PrometheusUsage(PrometheusUsageClient(url, config.params), on_query=on_query)
    except UsageQueryError as error:
        raise UsageError(f"scheduler config: field {error}") from None


def cycle_with_usage(
    usage: UsageSource | None,
    cluster: ClusterInfo,
    config: SchedulerConfig,
    now: float,
    timer: Callable[[], float] = lambda: 0.0,
) -> Session:
    """One scheduling cycle (``run_cycle``) that reads the queues' usage first and records what they hold after."""
    if usage is not None:
        cluster.queue_usage = usage.read(now)
    session = run_cycle(cluster, config, now, timer)
    sample = session.allocation_sample()
    if usage is not None and sample is not None:
        usage.record(now, sample)
    return session

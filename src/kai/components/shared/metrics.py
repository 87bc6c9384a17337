"""Prometheus metrics with KAI's names (docs/kai-reference.md §8): the scheduler's prefixed by the metrics namespace
(``kai``), the binder's controller-runtime metrics as KAI's binder exposes them (no prefix). kai adds, for the
dashboards (deploy/helm/kai-scheduler/dashboards), the podgroups the last cycle left pending by their typed reason
and each node's GPUs and GPUs held (``LastCycle``)."""

import os
import threading
from collections import Counter as Tally
from collections.abc import Callable, Iterable, Iterator, Mapping

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, HistogramMetricFamily, UnknownMetricFamily

from kai.cluster.kube.ratelimit import WAIT_BUCKETS_S, Lane, Waits, Window
from kai.core.framework.session import Session
from kai.core.registry import ACTIONS
from kai.core.state.reasons import ReasonKind

SEARCHING_ACTIONS = tuple(name for name, action in ACTIONS.items() if action.searches_victims)
"""Actions that search for victims under a scenario search budget."""
LATENCY_BUCKETS_MS = [5 * 2**i for i in range(10)]
"""KAI's buckets of its millisecond histograms (5 ms to 2.56 s)."""


class SchedulerMetrics:
    def __init__(self, registry: CollectorRegistry, namespace: str = "kai") -> None:
        def gauge(name: str, doc: str, labels: tuple[str, ...] = ()) -> Gauge:
            return Gauge(name, doc, labels, namespace=namespace, registry=registry)

        def counter(name: str, doc: str, labels: tuple[str, ...] = ()) -> Counter:
            return Counter(name, doc, labels, namespace=namespace, registry=registry)

        self.e2e_latency = gauge("e2e_scheduling_latency_milliseconds", "Duration of the last scheduling cycle")
        self.open_latency = gauge("open_session_latency_milliseconds", "Duration of the last session open")
        self.close_latency = gauge("close_session_latency_milliseconds", "Duration of the last session close")
        self.action_latency = gauge("action_scheduling_latency_milliseconds", "Duration of each action", ("action",))

        def exact(name: str, doc: str) -> ExactCounter:
            return ExactCounter(f"{namespace}_{name}", doc, ("action",), registry)

        self.scheduled = exact("podgroups_scheduled_by_action", "Count of podgroups scheduled per action")
        self.evicted = counter(
            "pod_group_evicted_pods", "Pods evicted", ("podgroup", "namespace", "uid", "nodepool", "action")
        )
        queue = ("queue_name", "queue_metadata_name", "queue_display_name")
        self.fair_share_gpu = gauge("queue_fair_share_gpu", "Fair share of GPUs per queue", queue)
        self.fair_share_cpu = gauge("queue_fair_share_cpu_cores", "Fair share of CPU cores per queue", queue)
        self.fair_share_memory = gauge("queue_fair_share_memory_gb", "Fair share of memory (GB) per queue", queue)
        self.usage_cpu = gauge("queue_cpu_usage", "CPU usage of queue, as a share of the cluster's capacity", queue)
        self.usage_memory = gauge(
            "queue_memory_usage", "Memory usage of queue, as a share of the cluster's capacity", queue
        )
        self.usage_gpu = gauge("queue_gpu_usage", "GPU usage of queue, as a share of the cluster's capacity", queue)

        def latency(name: str, doc: str) -> Histogram:
            return Histogram(name, doc, namespace=namespace, registry=registry, buckets=LATENCY_BUCKETS_MS)

        self.usage_query_latency = latency(
            "usage_query_latency_milliseconds", "Usage database query latency histogram in milliseconds"
        )
        self.task_scheduling_latency = latency(
            "task_scheduling_latency_milliseconds", "Task scheduling latency in milliseconds (pod created to bound)"
        )
        self.task_bind_latency = latency(
            "task_bind_latency_milliseconds", "Task bind latency histogram in milliseconds (BindRequest written)"
        )
        self.last_cycle = LastCycle(namespace)
        registry.register(self.last_cycle)
        self.search_jobs = counter(
            "scenario_search_jobs", "Jobs considered by bounded scenario search", ("action", "result", "reduced_budget")
        )
        self.search_scenarios = counter(
            "scenario_search_scenarios", "Bounded-search scenarios by state", ("action", "generator", "state")
        )
        self.search_exhausted = counter(
            "scenario_search_action_budget_exhausted", "Action-level scenario search budget exhaustions", ("action",)
        )
        self.filtered = exact("scenarios_filtered_by_action", "Count of scenarios filtered per action")
        self.search_duration = Histogram(
            "scenario_search_duration_seconds",
            "Elapsed generator-search duration in seconds",
            ("action", "generator", "result"),
            namespace=namespace,
            registry=registry,
            buckets=[0.001 * 2**i for i in range(16)],
        )
        self.action_budget = gauge(
            "scenario_search_action_budget_configured_seconds", "Configured action search budget", ("action",)
        )
        self.job_budget = gauge("scenario_search_job_budget_configured_seconds", "Configured per-job search budget")
        self.generator_budget = gauge(
            "scenario_search_generator_budget_configured_seconds", "Configured generator search budget", ("generator",)
        )
        self.evictions_sent = counter(
            "evictions_sent",
            "Pods the scheduler evicted (evicted: through the Eviction API or deleted; suspended: their workload was "
            "suspended; refused: the API server refused the decision they were part of)",
            ("action", "outcome"),
        )
        self.budget_left = gauge(
            "eviction_budget_remaining", "Evictions the eviction budget still allowed after the cycle", ("window",)
        )
        self.held = gauge(
            "eviction_held_podgroups",
            "Pending podgroups the PodDisruptionBudgets or the eviction budget kept from evicting in the cycle",
            ("reason",),
        )

    def observe(self, ssn: Session, cycle_ms: float, evictions: Iterable[tuple[str, str]] = ()) -> None:
        """``evictions``: (action, outcome) of each pod the writer evicted, suspended or saw refused."""
        self.e2e_latency.set(cycle_ms)
        self._observe_evictions(ssn, evictions)
        result = ssn.result
        jobs = ssn.jobs
        for bind in result.binds:
            job = jobs.get(bind.podgroup_key)
            task = job.tasks.get(bind.pod_key) if job is not None else None
            if task is not None and task.pod.meta.creation_ts > 0:
                self.task_scheduling_latency.observe(max(0.0, ssn.now - task.pod.meta.creation_ts) * 1000)
        self.last_cycle.observe(ssn)
        self.open_latency.set(result.open_ms)
        self.close_latency.set(result.close_ms)
        for action, milliseconds in result.action_ms.items():
            self.action_latency.labels(action).set(milliseconds)
        for action, count in result.scheduled.items():
            self.scheduled.inc((action,), count)
        for eviction in result.evictions:
            namespace, _, name = eviction.podgroup_key.partition("/")
            self.evicted.labels(name, namespace, name, "default", eviction.action).inc()
        for uid, queue in ssn.queues.items():
            if not ssn.queue_share_fns:
                break
            shares = ssn.queue_share_fns[0](uid)
            fair, usage = shares["fairShare"], shares["usage"]
            labels = (queue.name, queue.uid, queue.queue.display_name)
            self.fair_share_gpu.labels(*labels).set(fair["gpu"])
            self.fair_share_cpu.labels(*labels).set(fair["cpu"] / 1000)
            self.fair_share_memory.labels(*labels).set(fair["memory"] / 1e9)
            self.usage_cpu.labels(*labels).set(usage["cpu"])
            self.usage_memory.labels(*labels).set(usage["memory"])
            self.usage_gpu.labels(*labels).set(usage["gpu"])
        self._observe_search(ssn)

    def _observe_evictions(self, ssn: Session, evictions: Iterable[tuple[str, str]]) -> None:
        for action, outcome in evictions:
            self.evictions_sent.labels(action, outcome).inc()
        for window, _, left in ssn.disruption.caps:
            self.budget_left.labels(window).set(left)
        notes = [note.kind for note in ssn.disruption.notes.values()]
        for kind in (ReasonKind.DISRUPTION_BUDGET, ReasonKind.EVICTION_BUDGET, ReasonKind.PREEMPTION_NEVER):
            self.held.labels(kind.value).set(notes.count(kind))

    def _observe_search(self, ssn: Session) -> None:
        search, budgets = ssn.result.search, ssn.config.search_budgets
        for (action, result, reduced), count in search.jobs.items():
            self.search_jobs.labels(action, result, str(reduced).lower()).inc(count)
        for (action, generator, state), count in search.scenarios.items():
            self.search_scenarios.labels(action, generator, state).inc(count)
        for action, count in search.filtered.items():
            self.filtered.inc((action,), count)
        for action, count in search.budget_exhausted.items():
            self.search_exhausted.labels(action).inc(count)
        for action, generator, result, seconds in search.durations:
            self.search_duration.labels(action, generator, result).observe(seconds)
        for action in ssn.config.actions:
            if action in SEARCHING_ACTIONS:
                self.action_budget.labels(action).set(budgets.action_limit(action))
        self.job_budget.set(budgets.job_s)
        for generator, seconds in budgets.generator_limits().items():
            self.generator_budget.labels(generator).set(seconds)


class ExactCounter:
    """A counter exposed under exactly its name, as KAI's Go client exposes its counters whose names have no
    ``_total`` (``kai_podgroups_scheduled_by_action``): prometheus_client would add one, and KAI's dashboards and
    alerts would find nothing. The text format names a counter's samples ``<name>_total``, so it is exposed untyped
    (``rate()`` reads it as any counter)."""

    def __init__(self, name: str, doc: str, labels: tuple[str, ...], registry: CollectorRegistry) -> None:
        self.name, self.doc, self.labels = name, doc, labels
        self._values: dict[tuple[str, ...], float] = {}
        self._lock = threading.Lock()
        registry.register(self)

    def inc(self, labels: tuple[str, ...], amount: float = 1.0) -> None:
        with self._lock:
            self._values[labels] = self._values.get(labels, 0.0) + amount

    def collect(self) -> Iterator[UnknownMetricFamily]:
        family = UnknownMetricFamily(self.name, self.doc, labels=self.labels)
        with self._lock:
            values = sorted(self._values.items())
        for labels, value in values:
            family.add_metric(list(labels), value)
        yield family


class LastCycle:
    """What the last cycle saw, served as gauges at scrape time: the podgroups it left pending, by queue and by the
    kind of their headline reason (``kai explain``'s), and each node's GPUs and the GPUs its pods hold. Computed at
    the end of the cycle (one pass over the pending podgroups, array copies for the nodes) and swapped in whole, so a
    scrape never sees half of a cycle, and a node or reason gone is gone from the next scrape."""

    def __init__(self, namespace: str) -> None:
        self.namespace = namespace
        self._pending: Mapping[tuple[str, str], int] = {}
        self._nodes: tuple[list[str], list[float], list[float]] = ([], [], [])

    def observe(self, ssn: Session) -> None:
        pending: Tally[tuple[str, str]] = Tally()
        queues, jobs, invalid = ssn.queues, ssn.jobs, ssn.cluster.unschedulable_jobs
        for key, waiting in ssn.result.unschedulable.items():
            job = jobs.get(key) or invalid.get(key)
            named = job.queue if job is not None else ""
            queue = queues.get(named)
            reason = waiting.reasons[0].kind if waiting.reasons else ReasonKind.UNKNOWN
            pending[(queue.name if queue is not None else named, str(reason))] += 1
        table = ssn.cluster.nodes
        gpus, held = table.gpu_use()
        self._pending = pending
        self._nodes = ([info.name for info in table.infos], gpus.tolist(), held.tolist())

    def collect(self) -> Iterator[GaugeMetricFamily]:
        pending = GaugeMetricFamily(
            f"{self.namespace}_pending_podgroups",
            "Podgroups the last scheduling cycle left pending, by queue and the kind of their headline reason",
            labels=("queue_name", "reason"),
        )
        for (queue, reason), count in sorted(self._pending.items()):
            pending.add_metric([queue, reason], count)
        yield pending
        names, gpus, held = self._nodes
        allocatable = GaugeMetricFamily(
            f"{self.namespace}_node_allocatable_gpus", "GPUs of each node the scheduler sees", labels=("node",)
        )
        allocated = GaugeMetricFamily(
            f"{self.namespace}_node_allocated_gpus",
            "GPUs held by pods on each node (a shared GPU counts the part of its memory held)",
            labels=("node",),
        )
        for name, total, used in zip(names, gpus, held, strict=True):
            allocatable.add_metric([name], total)
            allocated.add_metric([name], used)
        yield allocatable
        yield allocated


class BinderMetrics:
    """controller-runtime's reconcile metrics for KAI's ``bindrequest`` controller: one reconcile per bind attempt, by
    outcome (``success`` or ``error``), and its duration, so retries, failures and bind latency can be graphed and
    alerted on as for KAI. As controller-runtime does, every series starts at 0, so a binder that never failed still
    answers ``rate(controller_runtime_reconcile_errors_total[5m])`` with 0 rather than no data."""

    CONTROLLER = "bindrequest"
    RESULTS = ("error", "requeue", "requeue_after", "success")
    TIME_BUCKETS_S = (
        0.005, 0.01, 0.025, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0, 1.25,
        1.5, 1.75, 2.0, 2.5, 3.0, 3.5, 4.0, 4.5, 5, 6, 7, 8, 9, 10, 15, 20, 25, 30, 40, 50, 60,
    )  # fmt: skip
    """controller-runtime's buckets of controller_runtime_reconcile_time_seconds."""
    LAG_BUCKETS_S = (0.05, 0.1, 0.25, 0.5, 1.0, 1.5, 2.0, 3.0, 5.0, 10.0, 20.0, 40.0, 80.0, 160.0, 320.0)

    def __init__(self, registry: CollectorRegistry) -> None:
        self.reconciles = Counter(
            "controller_runtime_reconcile",
            "Total number of reconciliations per controller",
            ("controller", "result"),
            registry=registry,
        )
        self.errors = Counter(
            "controller_runtime_reconcile_errors",
            "Total number of reconciliation errors per controller",
            ("controller",),
            registry=registry,
        )
        self.time = Histogram(
            "controller_runtime_reconcile_time_seconds",
            "Length of time per reconciliation per controller",
            ("controller",),
            registry=registry,
            buckets=self.TIME_BUCKETS_S,
        )
        self.lag = Histogram(
            "kai_binder_bind_lag_seconds",
            "Time from a BindRequest's arrival at the binder to its pod bound (how far binding trails scheduling)",
            registry=registry,
            buckets=self.LAG_BUCKETS_S,
        )
        for result in self.RESULTS:
            self.reconciles.labels(self.CONTROLLER, result)
        self.errors.labels(self.CONTROLLER)
        self.time.labels(self.CONTROLLER)

    def succeeded(self, seconds: float) -> None:
        self.reconciles.labels(self.CONTROLLER, "success").inc()
        self.time.labels(self.CONTROLLER).observe(seconds)

    def failed(self, seconds: float) -> None:
        self.reconciles.labels(self.CONTROLLER, "error").inc()
        self.errors.labels(self.CONTROLLER).inc()
        self.time.labels(self.CONTROLLER).observe(seconds)


class RestClientMetrics:
    """client-go's ``rest_client_requests_total`` (code, host, method) for this process's API requests, which KAI's
    components expose too: divided by the pods bound, it is the API cost of a pod; and
    ``rest_client_rate_limiter_duration_seconds`` (host, verb): how long requests waited for the client-side rate
    limit (``--qps`` / ``--burst``)."""

    def __init__(
        self,
        counts: Callable[[], Mapping[tuple[str, str], int]],
        host: str,
        waits: Callable[[], Mapping[str, Waits]] = dict,
    ) -> None:
        self.counts = counts
        self.host = host
        self.waits = waits

    def collect(self) -> Iterator[CounterMetricFamily | HistogramMetricFamily]:
        family = CounterMetricFamily(
            "rest_client_requests",
            "Number of HTTP requests, partitioned by status code, method, and host.",
            labels=("code", "host", "method"),
        )
        for (method, code), count in sorted(self.counts().items()):
            family.add_metric([code, self.host, method], count)
        yield family
        waited = HistogramMetricFamily(
            "rest_client_rate_limiter_duration_seconds",
            "Client side rate limiter latency in seconds. Broken down by verb, and host.",
            labels=("host", "verb"),
        )
        for verb, waits in sorted(self.waits().items()):
            cumulative, buckets = 0, []
            for bound, count in zip(WAIT_BUCKETS_S, waits.counts, strict=True):
                cumulative += count
                buckets.append((str(bound), cumulative))
            buckets.append(("+Inf", waits.total))
            waited.add_metric([self.host, verb], buckets, waits.sum_s)
        yield waited


class LaneMetrics:
    """What each component of the process asked of the API server (kai's, beside client-go's totals): requests by
    component, verb, resource and code (``kai_rest_client_requests_total``: divided by the pods bound, where the API
    cost of a pod goes); how long they waited for their component's rate limit, by purpose
    (``kai_rest_client_rate_limiter_wait_seconds``); the window of requests in flight and the refusals that moved it
    (``ratelimit.Window``)."""

    def __init__(self, lanes: Callable[[], Mapping[str, Lane]], window: Window) -> None:
        self.lanes = lanes
        self.window = window

    def collect(self) -> Iterator[CounterMetricFamily | GaugeMetricFamily]:
        lanes = self.lanes()
        requests = CounterMetricFamily(
            "kai_rest_client_requests",
            "API requests by component, verb, resource and status code",
            labels=("component", "method", "resource", "code"),
        )
        for name, lane in sorted(lanes.items()):
            for (method, resource, code), count in sorted(lane.requests.items()):
                requests.add_metric([name, method, resource, code], count)
        yield requests
        waited = CounterMetricFamily(
            "kai_rest_client_rate_limiter_wait_seconds",
            "Time requests waited for their component's client-side rate limit, by component and purpose",
            labels=("component", "purpose"),
        )
        for name, lane in sorted(lanes.items()):
            for purpose, waits in sorted(lane.bucket.purpose_waits.items()):
                waited.add_metric([name, purpose.name.lower()], waits.sum_s)
        yield waited
        took = CounterMetricFamily(
            "kai_rest_client_request_seconds",
            "Time requests took from sent to answered, by component (watches excluded)",
            labels=("component",),
        )
        answered = CounterMetricFamily(
            "kai_rest_client_requests_answered",
            "Requests answered, by component (watches excluded)",
            labels=("component",),
        )
        for name, lane in sorted(lanes.items()):
            took.add_metric([name], lane.seconds)
            answered.add_metric([name], lane.answered)
        yield took
        yield answered
        yield GaugeMetricFamily(
            "kai_rest_client_window", "Requests allowed in flight to the API server now", value=self.window.size
        )
        yield CounterMetricFamily(
            "kai_rest_client_refusals",
            "Answers that narrowed the window: 429, or 503 with a Retry-After",
            value=self.window.refusals,
        )


class ThreadCpu:
    """CPU seconds of the process's threads by component (``kai_thread_cpu_seconds_total``): a component's loop
    thread and its write pool are named ``kai-<component>…``; ``kai-kube-io`` sends and decodes every request and
    watch, ``kai-kube-listeners`` feeds every component's state from the watches; the rest is ``other``. A thread's
    CPU is counted while it lives (pools and loops live as long as the process). Linux only (``/proc``)."""

    GROUPS = ("kai-kube-io", "kai-kube-listeners")

    def collect(self) -> Iterator[CounterMetricFamily]:
        family = CounterMetricFamily(
            "kai_thread_cpu_seconds", "CPU seconds used by the process's threads, by component", labels=("thread",)
        )
        ticks = os.sysconf("SC_CLK_TCK")
        used: dict[str, float] = {}
        for thread in threading.enumerate():
            try:
                with open(f"/proc/self/task/{thread.native_id}/stat") as stat:
                    fields = stat.read().rsplit(")", 1)[1].split()
            except OSError:
                continue
            group = _thread_group(thread.name)
            used[group] = used.get(group, 0.0) + (int(fields[11]) + int(fields[12])) / ticks
        for group, seconds in sorted(used.items()):
            family.add_metric([group], seconds)
        yield family


def _thread_group(name: str) -> str:
    if name in ThreadCpu.GROUPS:
        return name.removeprefix("kai-")
    if name.startswith("kai-"):
        return name.removeprefix("kai-").split("-write", 1)[0]
    return "other"

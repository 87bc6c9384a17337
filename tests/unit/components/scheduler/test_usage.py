"""Time-based fair share in the scheduler: the loop feeds the builtin usage store, persists its history in a
ConfigMap and restores it after a restart; usage is exported as KAI's metrics; Prometheus as the optional source.

The Prometheus tests run against a tiny HTTP server that answers with Prometheus' JSON: a test double for an
external system kai does not ship (the queries themselves are checked as text).
"""

import json
import logging
import random
import threading
import urllib.parse
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, ClassVar

import pytest
from core_builders import T0, node, pod, podgroup, queue
from prometheus_client import CollectorRegistry

from kai.cluster.memory import MemoryCluster
from kai.cluster.prometheus import PrometheusUsageClient, UsageQueryError
from kai.components.scheduler.loop import SchedulerLoop
from kai.components.scheduler.usage import PrometheusUsage, UsageError, usage_source
from kai.components.scheduler.usage_history import ConfigMapHistory, decode, encode
from kai.components.shared.metrics import SchedulerMetrics
from kai.core.config import parse_config
from kai.core.framework.usage.usage_config import UsageParams, WindowType
from kai.core.framework.usage.usage_store import AllocationSample, UsageStore

MINUTE = 60.0
CONFIG = parse_config({"usageDBConfig": {"clientType": "builtin", "usageParams": {"windowSize": "1h"}}})
CONFIGMAP = "kai-scheduler/kai-scheduler-usage"


def running_cluster() -> MemoryCluster:
    """16 GPUs, all held by queue a's running job; queue b holds nothing."""
    cluster = MemoryCluster()
    cluster.create("PriorityClass", {"metadata": {"name": "train"}, "value": 50})
    for name in ("a", "b"):
        cluster.create("Queue", queue(name, gpu_quota=0))
    cluster.create("Node", node("node-0", 16))
    cluster.create("PodGroup", podgroup("job-a", "a", T0, minMember=1))
    cluster.create("Pod", pod("job-a-0", "job-a", gpus=16, node_name="node-0"))
    return cluster


class Clock:
    def __init__(self, now: float) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def run_for(loop: SchedulerLoop, clock: Clock, minutes: int, step: float = MINUTE) -> None:
    end = clock.now + minutes * MINUTE
    while clock.now < end:
        loop.run_once()
        clock.now += step


def test_the_loop_feeds_the_store_and_exports_usage_as_kai_metrics() -> None:
    """Queue a held the whole cluster for the 30 minutes there is history of: half of the 1h window."""
    registry = CollectorRegistry()
    clock = Clock(T0)
    loop = SchedulerLoop(running_cluster(), CONFIG, SchedulerMetrics(registry), clock=clock)
    run_for(loop, clock, 30)
    session = loop.run_once()
    assert session.cluster.queue_usage["a"][2] == pytest.approx(0.5)
    assert session.cluster.queue_usage["b"][2] == 0.0
    labels = {"queue_name": "a", "queue_metadata_name": "a", "queue_display_name": ""}
    assert registry.get_sample_value("kai_queue_gpu_usage", labels) == pytest.approx(0.5)
    assert (
        registry.get_sample_value("kai_queue_gpu_usage", {**labels, "queue_name": "b", "queue_metadata_name": "b"}) == 0
    )
    assert registry.get_sample_value("kai_usage_query_latency_milliseconds_count") == 31


def test_usage_is_refreshed_once_per_fetch_interval() -> None:
    clock = Clock(T0)
    loop = SchedulerLoop(running_cluster(), CONFIG, clock=clock)
    seen = []
    for _ in range(150):  # a cycle a second for 150 s
        seen.append(loop.run_once().cluster.queue_usage.get("a", (0.0, 0.0, 0.0))[2])
        clock.now += 1
    changes = [second for second in range(1, 150) if seen[second] != seen[second - 1]]
    assert changes == [60, 120]
    assert seen[-1] == pytest.approx(120 / 3600)


def test_history_is_written_at_most_every_fetch_interval_and_survives_a_restart() -> None:
    cluster, clock = running_cluster(), Clock(T0)
    loop = SchedulerLoop(cluster, CONFIG, clock=clock)
    versions = set()
    for _ in range(5 * 6):  # five minutes, a cycle every 10 s
        loop.run_once()
        configmap = cluster.get("ConfigMap", CONFIGMAP)
        assert configmap is not None
        versions.add(configmap["metadata"]["resourceVersion"])
        clock.now += 10
    assert len(versions) == 5
    twin = SchedulerLoop(running_cluster(), CONFIG, clock=clock)  # the same history, never restarted
    twin.usage = loop.usage
    run_for(loop, clock, 25, step=20.0)
    # a rollout: the new scheduler starts 40 s later from what the old one last wrote
    clock.now += 40
    restarted = SchedulerLoop(cluster, CONFIG, clock=clock).run_once().cluster.queue_usage
    continued = twin.run_once().cluster.queue_usage
    assert restarted["a"][2] == pytest.approx(continued["a"][2], rel=1e-6)
    assert 0.4 < restarted["a"][2] < 0.6 and restarted["b"] == continued["b"] == (0.0, 0.0, 0.0)
    assert SchedulerLoop(MemoryCluster(), CONFIG, clock=clock).run_once().cluster.queue_usage == {}


def test_an_unreadable_history_is_reported_and_the_scheduler_starts_with_none(
    caplog: pytest.LogCaptureFixture,
) -> None:
    cluster = running_cluster()
    meta = {"name": "kai-scheduler-usage", "namespace": "kai-scheduler"}
    cluster.create("ConfigMap", {"metadata": meta, "data": {"history.json": "{not json"}})
    with caplog.at_level(logging.WARNING):
        loop = SchedulerLoop(cluster, CONFIG, clock=Clock(T0))
    assert loop.run_once().cluster.queue_usage == {}
    assert "usage history in ConfigMap kai-scheduler/kai-scheduler-usage: unreadable (JSONDecodeError" in caplog.text


def test_a_history_in_a_configmap_named_by_the_connection_string() -> None:
    config = parse_config({"usageDBConfig": {"clientType": "builtin", "connectionString": "ops/tbf-history"}})
    cluster, clock = running_cluster(), Clock(T0)
    SchedulerLoop(cluster, config, clock=clock).run_once()
    assert cluster.get("ConfigMap", "ops/tbf-history") is not None
    assert cluster.get("ConfigMap", CONFIGMAP) is None


def test_encode_decode_round_trip() -> None:
    store = UsageStore(UsageParams(window_s=3600))
    for step in range(50):
        store.record(T0 + step * 37, AllocationSample((8000, 8e9, 8), {"a": (step, 1e9, step % 8), "b": (1, 2, 3)}))
    history = store.history()
    data, binary = encode(history)
    back = decode({"data": data, "binaryData": binary})
    assert (back.bucket_s, back.queues, back.held, back.held_at) == (
        history.bucket_s,
        history.queues,
        history.held,
        history.held_at,
    )
    assert (back.ids == history.ids).all() and (back.first == history.first).all()
    assert back.amounts == pytest.approx(history.amounts, rel=1e-6)


def test_a_history_too_large_for_a_configmap_is_not_written(caplog: pytest.LogCaptureFixture) -> None:
    store = UsageStore(UsageParams(window_s=7 * 86400))
    rng = random.Random(1)
    queues = {f"q{i}": (rng.random(), rng.random(), rng.random()) for i in range(600)}
    for step in range(300):
        store.record(
            T0 + step * 2400,
            AllocationSample((1, 1, 1), {q: tuple(v * rng.random() for v in u) for q, u in queues.items()}),
        )
    cluster = MemoryCluster()
    with caplog.at_level(logging.WARNING):
        ConfigMapHistory(cluster, "kai-scheduler", "big").save(store.history())
    assert cluster.get("ConfigMap", "kai-scheduler/big") is None
    assert "would not fit a ConfigMap (600 queues); not written" in caplog.text


# --- Prometheus ------------------------------------------------------------------------------------------------


class FakePrometheus(BaseHTTPRequestHandler):
    """Answers /api/v1/query from ``answers`` (query text → vector samples); records every query."""

    answers: ClassVar[dict[str, list[dict[str, Any]]]] = {}
    queries: ClassVar[list[str]] = []

    def do_GET(self) -> None:
        url = urllib.parse.urlparse(self.path)
        query = urllib.parse.parse_qs(url.query)["query"][0]
        self.queries.append(query)
        if query in self.answers:
            status, body = 200, {"status": "success", "data": {"resultType": "vector", "result": self.answers[query]}}
        else:
            status, body = 400, {"status": "error", "errorType": "bad_data", "error": "unknown query"}
        payload = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def prometheus() -> Iterator[str]:
    FakePrometheus.answers, FakePrometheus.queries = {}, []
    server = ThreadingHTTPServer(("127.0.0.1", 0), FakePrometheus)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def vector(value: float, **labels: str) -> dict[str, Any]:
    return {"metric": labels, "value": [T0, str(value)]}


def kai_answers(window: str, decay: str = "") -> dict[str, list[dict[str, Any]]]:
    def query(metric: str) -> str:
        decayed = f"(({metric}) * ({decay}))" if decay else metric
        return f"sum_over_time(({decayed})[{window}:1m0s])"

    return {
        query('sum(kube_node_status_capacity{resource="nvidia_com_gpu"})'): [vector(160)],
        query('sum(kube_node_status_capacity{resource="cpu"})'): [vector(6400)],
        query('sum(kube_node_status_capacity{resource="memory"})'): [vector(1e12)],
        query("kai_queue_allocated_gpus"): [vector(40, queue_name="a"), vector(120, queue_name="b")],
        query("kai_queue_allocated_cpu_cores"): [vector(640, queue_name="a")],
        query("kai_queue_allocated_memory_bytes"): [],
    }


def test_prometheus_usage_with_kais_queries(prometheus: str) -> None:
    decay = f"0.5^(({int(T0)} - time()) / 600.000000)"
    FakePrometheus.answers = kai_answers("1w", decay)
    client = PrometheusUsageClient(prometheus, UsageParams(half_life_s=600))
    usage = client.query_usage(T0)
    assert usage == {"a": (0.1, 0.0, 0.25), "b": (0.0, 0.0, 0.75)}
    assert sorted(FakePrometheus.queries) == sorted(FakePrometheus.answers)


def test_prometheus_tumbling_window_asks_for_the_time_since_the_reset(prometheus: str) -> None:
    FakePrometheus.answers = kai_answers("1800s")
    params = UsageParams(window_type=WindowType.TUMBLING, window_s=3600, tumbling_start=T0 - 2.5 * 3600)
    assert PrometheusUsageClient(prometheus, params).query_usage(T0)["b"] == (0.0, 0.0, 0.75)


def test_prometheus_errors_name_the_query(prometheus: str) -> None:
    client = PrometheusUsageClient(prometheus, UsageParams())
    with pytest.raises(UsageQueryError, match=r"bad_data: unknown query, full query: sum_over_time\("):
        client.query_usage(T0)
    FakePrometheus.answers = {
        **kai_answers("1w"),
        'sum_over_time((sum(kube_node_status_capacity{resource="nvidia_com_gpu"}))[1w:1m0s])': [],
    }
    with pytest.raises(UsageQueryError, match="no data returned for cluster capacity metric"):
        client.query_usage(T0)
    with pytest.raises(UsageQueryError, match=r"cannot reach Prometheus at http://127\.0\.0\.1:9"):
        PrometheusUsageClient("http://127.0.0.1:9", UsageParams(query_timeout_s=2)).query_usage(T0)


def test_the_prometheus_source_fetches_in_the_background_and_the_loop_reads_the_latest(prometheus: str) -> None:
    FakePrometheus.answers = kai_answers("1w")
    source = PrometheusUsage(PrometheusUsageClient(prometheus, UsageParams(wait_timeout_s=10)), clock=lambda: T0)
    try:
        assert source.read(T0)["a"] == (0.1, 0.0, 0.25)
    finally:
        source.close()


def test_a_prometheus_connection_string_from_an_unset_environment_variable_is_an_error(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("KAI_TEST_PROMETHEUS", raising=False)
    config = parse_config(
        {"usageDBConfig": {"clientType": "prometheus", "connectionStringEnvVar": "KAI_TEST_PROMETHEUS"}}
    )
    with pytest.raises(
        UsageError, match="connectionStringEnvVar: environment variable 'KAI_TEST_PROMETHEUS' is not set"
    ):
        usage_source(config.usage_db, MemoryCluster(), "kai-scheduler")
    config = parse_config({"usageDBConfig": {"clientType": "prometheus", "connectionString": "prometheus:9090"}})
    with pytest.raises(UsageError, match="connectionString: got 'prometheus:9090'; expected an http"):
        usage_source(config.usage_db, MemoryCluster(), "kai-scheduler")

"""The metrics the dashboards read (deploy/helm/kai-scheduler/dashboards): KAI's task latencies, kai's pending
podgroups by reason and GPUs per node from the scheduler loop, and the binder's controller-runtime series."""

from typing import Any

import pytest
from core_builders import T0, node, pod, podgroup, queue
from prometheus_client import CollectorRegistry, generate_latest

from kai.cluster.memory import MemoryCluster
from kai.components.scheduler.loop import SchedulerLoop
from kai.components.shared.metrics import BinderMetrics, SchedulerMetrics
from kai.core.config import parse_config
from kai.core.model.meta import format_time


def created(obj: dict[str, Any], when: float) -> dict[str, Any]:
    obj["metadata"]["creationTimestamp"] = format_time(when)
    return obj


def fraction_pod(name: str, group: str, fraction: str) -> dict[str, Any]:
    shared = pod(name, group, gpus=0)
    shared["metadata"]["annotations"]["gpu-fraction"] = fraction
    return shared


def cluster() -> MemoryCluster:
    """node-0 has 4 GPUs of 40 GiB; queue a runs a 1-GPU pod there, and asks for half a GPU, and for 8 GPUs."""
    objects = MemoryCluster()
    objects.create("PriorityClass", {"metadata": {"name": "train"}, "value": 50})
    objects.create("Queue", queue("a"))
    gpu_node = node("node-0", 4)
    gpu_node["metadata"]["labels"]["nvidia.com/gpu.memory"] = "40960"
    objects.create("Node", gpu_node)
    for name in ("running", "half", "huge"):
        objects.create("PodGroup", podgroup(name, "a", T0 - 60, minMember=1))
    objects.create("Pod", created(pod("running-0", "running", gpus=1, node_name="node-0"), T0 - 60))
    objects.create("Pod", created(fraction_pod("half-0", "half", "0.5"), T0 - 3))
    objects.create("Pod", created(pod("huge-0", "huge", gpus=8), T0 - 3))
    return objects


def scheduled(objects: MemoryCluster) -> tuple[CollectorRegistry, SchedulerLoop]:
    registry = CollectorRegistry()
    loop = SchedulerLoop(objects, parse_config({}), SchedulerMetrics(registry), clock=lambda: T0)
    loop.run_once()
    return registry, loop


def test_a_cycle_exports_pending_podgroups_by_reason_and_each_nodes_gpus():
    objects = cluster()
    registry, loop = scheduled(objects)
    assert registry.get_sample_value("kai_pending_podgroups", {"queue_name": "a", "reason": "TooLargeForAnyNode"}) == 1
    assert registry.get_sample_value("kai_node_allocatable_gpus", {"node": "node-0"}) == 4
    assert registry.get_sample_value("kai_node_allocated_gpus", {"node": "node-0"}) == pytest.approx(1.5)
    objects.delete("Pod", "default/huge-0")
    objects.finalize("Pod", "default/huge-0")
    loop.run_once()
    assert (
        registry.get_sample_value("kai_pending_podgroups", {"queue_name": "a", "reason": "TooLargeForAnyNode"}) is None
    )


def test_binding_exports_kais_task_latencies():
    """half-0 was created 3 s before the cycle that placed it; its BindRequest was written once."""
    registry, _ = scheduled(cluster())
    assert registry.get_sample_value("kai_task_scheduling_latency_milliseconds_count") == 1
    assert registry.get_sample_value("kai_task_scheduling_latency_milliseconds_sum") == pytest.approx(3000)
    assert registry.get_sample_value("kai_task_bind_latency_milliseconds_count") == 1


def test_the_binders_series_exist_from_the_start_as_controller_runtimes_do():
    registry = CollectorRegistry()
    metrics = BinderMetrics(registry)
    for result in ("success", "error", "requeue", "requeue_after"):
        labels = {"controller": "bindrequest", "result": result}
        assert registry.get_sample_value("controller_runtime_reconcile_total", labels) == 0
    assert registry.get_sample_value("controller_runtime_reconcile_errors_total", {"controller": "bindrequest"}) == 0
    metrics.succeeded(0.02)
    metrics.failed(0.5)
    time_labels = {"controller": "bindrequest"}
    assert registry.get_sample_value("controller_runtime_reconcile_time_seconds_count", time_labels) == 2
    assert (
        registry.get_sample_value("controller_runtime_reconcile_time_seconds_bucket", {**time_labels, "le": "0.025"})
        == 1
    )
    assert registry.get_sample_value("controller_runtime_reconcile_errors_total", time_labels) == 1


def test_kais_counters_without_total_keep_their_names():
    """KAI's Go client exposes kai_podgroups_scheduled_by_action as named; its dashboards query that name."""
    registry, _ = scheduled(cluster())
    text = generate_latest(registry).decode()
    assert 'kai_podgroups_scheduled_by_action{action="allocate"} 1.0' in text.splitlines()
    assert "kai_podgroups_scheduled_by_action_total" not in text

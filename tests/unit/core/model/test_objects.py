"""Objects parsed at the edge: KAI's units and rules, and errors that name object, field and what is allowed."""

import pytest

from kai.core.model.disruption_budget import parse_disruption_budget
from kai.core.model.errors import InvalidObject
from kai.core.model.meta import Raw
from kai.core.model.objects import parse_node, parse_pod, parse_podgroup, parse_priority_class, parse_queue
from kai.core.model.resources import GpuRequestKind


def test_pod_gpu_request_kinds() -> None:
    def pod(annotations: dict[str, str], requests: dict[str, str]) -> GpuRequestKind:
        raw = {
            "metadata": {"name": "p", "namespace": "n", "annotations": annotations},
            "spec": {"containers": [{"name": "c", "resources": {"requests": requests}}]},
        }
        return parse_pod(raw).request.gpu_kind

    assert pod({}, {"nvidia.com/gpu": "2"}) is GpuRequestKind.REGULAR
    assert pod({"gpu-fraction": "0.5"}, {}) is GpuRequestKind.FRACTION
    assert pod({"gpu-memory": "2000"}, {}) is GpuRequestKind.MEMORY
    assert pod({}, {"nvidia.com/mig-1g.10gb": "1"}) is GpuRequestKind.MIG
    assert pod({}, {"cpu": "1"}) is GpuRequestKind.NONE


def test_queue_units_and_unset_limit_is_zero() -> None:
    queue = parse_queue({"metadata": {"name": "q"}, "spec": {"resources": {"memory": {"quota": 2, "limit": -1}}}})
    assert queue.memory.quota == 2_000_000  # MB
    assert queue.memory.limit == -1
    assert queue.gpu.limit == 0  # unset limit allows nothing, as in KAI
    assert queue.priority == 100


def test_node_gpu_memory_is_floored_to_hundreds() -> None:
    node = parse_node({"metadata": {"name": "n", "labels": {"nvidia.com/gpu.memory": "81559"}}, "status": {}})
    assert node.gpu_memory_mib == 81500
    assert parse_node({"metadata": {"name": "m"}}).gpu_memory_mib == 100


def test_podgroup_rejects_unknown_preemptibility() -> None:
    with pytest.raises(InvalidObject, match=r"spec\.preemptibility: got 'sometimes'; allowed: preemptible"):
        parse_podgroup({"metadata": {"name": "g", "namespace": "n"}, "spec": {"preemptibility": "sometimes"}})


def test_native_sidecars_add_to_the_pod_request() -> None:
    """Init containers with restartPolicy Always run beside the main containers (KAI v0.17, kubelet's
    aggregation): they add up; a plain init container only raises the peak, with the sidecars started before it."""
    pod = parse_pod(
        {
            "metadata": {"name": "p", "namespace": "d"},
            "spec": {
                "initContainers": [
                    {"name": "setup", "resources": {"requests": {"cpu": "3"}}},
                    {
                        "name": "proxy",
                        "restartPolicy": "Always",
                        "resources": {"requests": {"cpu": "500m", "memory": "1G"}},
                    },
                    {"name": "migrate", "resources": {"requests": {"cpu": "2", "memory": "1G"}}},
                ],
                "containers": [{"name": "main", "resources": {"requests": {"cpu": "1", "memory": "2G"}}}],
            },
        }
    )
    # steady state: 1 + 0.5 CPU, 2G + 1G; "setup" peaks at 3 CPU; "migrate" at 2 + 0.5 CPU and 1G + 1G
    assert pod.request.milli_cpu == 3000
    assert pod.request.memory_bytes == 3e9


def test_a_pdb_reads_what_the_api_servers_eviction_check_reads() -> None:
    raw = {
        "metadata": {"name": "web", "namespace": "ns", "generation": 2},
        "spec": {"maxUnavailable": "25%", "selector": {"matchLabels": {"app": "web"}}},
        "status": {
            "observedGeneration": 2,
            "disruptionsAllowed": 1,
            "disruptedPods": {"web-0": "2026-01-01T00:00:00Z"},
        },
    }
    budget = parse_disruption_budget(raw)
    assert (budget.disruptions_allowed, budget.disrupted_pods, budget.spec_text()) == (
        1,
        {"web-0"},
        "maxUnavailable: 25%",
    )
    assert budget.covers("ns", {"app": "web", "x": "y"}) and not budget.covers("other", {"app": "web"})
    raw["status"]["observedGeneration"] = 1  # the API server refuses every eviction until the controller catches up
    assert parse_disruption_budget(raw).disruptions_allowed == 0


def test_a_pdb_kai_cannot_read_names_the_field() -> None:
    raw = {"metadata": {"name": "web", "namespace": "ns"}, "spec": {"minAvailable": "half"}}
    with pytest.raises(InvalidObject, match=r"spec.minAvailable: got 'half'; allowed: a whole number or a percentage"):
        parse_disruption_budget(raw)


def test_a_priority_class_preemption_policy_is_read_and_checked() -> None:
    raw = {"metadata": {"name": "urgent"}, "value": 10, "preemptionPolicy": "Never"}
    assert parse_priority_class(raw).preemption_policy == "Never"
    with pytest.raises(InvalidObject, match="allowed: PreemptLowerPriority, Never"):
        parse_priority_class({**raw, "preemptionPolicy": "Sometimes"})


def test_kais_eviction_strategy_and_gating_annotations_that_cannot_be_used_are_warnings_not_errors() -> None:
    queue = {
        "metadata": {
            "name": "q",
            "annotations": {"kai.scheduler/eviction-strategy": "pause", "kai.scheduler/queue-admission-gating": "yes"},
        },
        "spec": {"resources": {}},
    }
    parsed = parse_queue(queue)
    assert (parsed.eviction_strategy, parsed.admission_gating) == ("", False)
    assert [w.field for w in parsed.warnings] == [
        "metadata.annotations.kai.scheduler/eviction-strategy",
        "metadata.annotations.kai.scheduler/queue-admission-gating",
    ]


def test_pods_that_ask_alike_share_their_requests() -> None:
    def pod(name: str, cpu: str) -> Raw:
        containers = [{"name": "c", "resources": {"requests": {"cpu": cpu}}}]
        return {"metadata": {"name": name, "namespace": "n"}, "spec": {"containers": containers}}

    first, second, third = parse_pod(pod("a", "1")), parse_pod(pod("b", "1")), parse_pod(pod("c", "2"))
    assert first.request is second.request and first.containers is second.containers
    assert third.request is not first.request and third.request.milli_cpu == 2000
    assert third.containers[0].requests == {"cpu": 2000}

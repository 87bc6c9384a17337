"""In-place pod resize (``pods/resize``, KAI #2021): a pod being resized is charged the larger of its sizes until the
kubelet is done (an Infeasible size never), and the pods/resize webhook refuses growth that would take a queue on
the pod's path over its limit (a non-preemptible pod's over its quota), with KAI's reason."""

from typing import Any

import pytest
from admission_support import request
from core_builders import T0, cluster, node, podgroup, queue

from kai.components.admission.pod_resize_validation import resize_delta, validate_pod_resize
from kai.components.admission.settings import AdmissionSettings
from kai.core.model.objects import parse_pod
from kai.core.state.resource_index import CPU_ROW
from kai.core.state.snapshot import take_snapshot

GIB = 2**30


def resized(
    spec_cpu: str,
    status_cpu: str | None = None,
    allocated_cpu: str | None = None,
    infeasible: bool = False,
    node_name: str = "n1",
    **extra: Any,
) -> dict[str, Any]:
    """A running pod of one container whose spec asks ``spec_cpu`` while the kubelet reports ``status_cpu`` running
    and ``allocated_cpu`` allocated (absent: the kubelet reports no resources)."""
    status: dict[str, Any] = {"phase": "Running"}
    if status_cpu is not None:
        reported: dict[str, Any] = {"name": "c", "resources": {"requests": {"cpu": status_cpu, "memory": "1Gi"}}}
        if allocated_cpu is not None:
            reported["allocatedResources"] = {"cpu": allocated_cpu, "memory": "1Gi"}
        status["containerStatuses"] = [reported]
    if infeasible:
        status["conditions"] = [{"type": "PodResizePending", "status": "True", "reason": "Infeasible"}]
    requests = {"cpu": spec_cpu, "memory": "1Gi"}
    return {
        "metadata": {"name": "web", "namespace": "default", "annotations": {"pod-group-name": "web"}, **extra},
        "spec": {
            "schedulerName": "kai-scheduler",
            "nodeName": node_name,
            "containers": [{"name": "c", "resources": {"requests": requests, "limits": requests}}],
        },
        "status": status,
    }


# ------------------------------------------------------------------------------------------- accounting


@pytest.mark.parametrize(
    ("spec", "running", "allocated", "infeasible", "charged"),
    [
        ("2", None, None, False, 2000),  # the kubelet reports no resources: the spec
        ("4", "2", "2", False, 4000),  # an upsize the kubelet has not enacted yet (pending, deferred, in progress)
        ("1", "2", "2", False, 2000),  # a downsize still in progress: its room is freed once the kubelet is done
        ("2", "2", "3", False, 3000),  # the kubelet allocated more than it runs
        ("8", "2", "2", True, 2000),  # Infeasible: the size the node cannot give is not charged
    ],
)
def test_a_resized_pod_is_charged_its_largest_current_size(spec, running, allocated, infeasible, charged):
    pod = parse_pod(resized(spec, running, allocated, infeasible))
    assert pod.request.milli_cpu == charged


def test_native_sidecars_are_charged_as_resized_and_other_init_containers_as_written():
    raw = resized("1", "1", "1")
    sidecar = {"name": "proxy", "restartPolicy": "Always", "resources": {"requests": {"cpu": "1"}}}
    setup = {"name": "setup", "resources": {"requests": {"cpu": "1"}}}
    raw["spec"]["initContainers"] = [setup, sidecar]
    raw["status"]["initContainerStatuses"] = [
        {"name": "setup", "resources": {"requests": {"cpu": "9"}}},
        {"name": "proxy", "resources": {"requests": {"cpu": "3"}}},
    ]
    assert parse_pod(raw).request.milli_cpu == 4000  # the app's 1 and the sidecar's 3 (its resize in progress)


def test_the_node_and_the_queue_are_charged_the_resized_size():
    """A 4-cpu node with a pod growing from 2 to 3 cpus: a 2-cpu pod no longer fits until the resize is undone."""
    small = {"cpu": "20000", "memory": "20G", "nvidia.com/gpu": "0", "pods": "110"}
    objects = [("Queue", queue("q")), ("Node", {**node("n1", 0), "status": {"allocatable": {**small, "cpu": "4"}}})]
    objects += [("PodGroup", podgroup("web", "q", T0)), ("Pod", resized("3", "2", "2"))]
    table = take_snapshot(cluster(*objects), "kai-scheduler", T0).nodes
    assert table.idle[CPU_ROW, table.by_name["n1"].column] == 1000
    objects[-1] = ("Pod", resized("2", "2", "2"))
    table = take_snapshot(cluster(*objects), "kai-scheduler", T0).nodes
    assert table.idle[CPU_ROW, table.by_name["n1"].column] == 2000


# ------------------------------------------------------------------------------------------- admission


def resize_request(old: dict[str, Any], new_cpu: str, new_memory: str = "1Gi") -> Any:
    new = {**old, "spec": {**old["spec"], "containers": [dict(old["spec"]["containers"][0])]}}
    amounts = {"cpu": new_cpu, "memory": new_memory}
    new["spec"]["containers"][0]["resources"] = {"requests": amounts, "limits": amounts}
    return request("Pod", new, "UPDATE", old)


def objects(cpu_limit: float = -1, allocated_cpu: str = "2", parent_memory_limit: float = -1, **group: Any) -> Any:
    """PodGroup web in queue team (under dept), the priority class it names, and the queues' status."""
    store: dict[tuple[str, str], dict[str, Any]] = {
        ("PodGroup", "default/web"): {"spec": {"queue": "team", "priorityClassName": "train", **group}},
        ("PriorityClass", "train"): {"value": 50},
        ("PriorityClass", "build"): {"value": 100},
        ("Queue", "team"): {
            "metadata": {"name": "team"},
            "spec": {"parentQueue": "dept", "resources": _resources(cpu=(-1, cpu_limit), memory=(-1, -1))},
            "status": {"allocated": {"cpu": allocated_cpu, "memory": "2Gi"}, "allocatedNonPreemptible": {"cpu": "2"}},
        },
        ("Queue", "dept"): {
            "metadata": {"name": "dept"},
            "spec": {"resources": _resources(cpu=(-1, -1), memory=(-1, parent_memory_limit))},
            "status": {"allocated": {"cpu": allocated_cpu, "memory": "2Gi"}},
        },
    }
    return lambda kind, key: store.get((kind, key))


def _resources(cpu: tuple[float, float], memory: tuple[float, float]) -> dict[str, Any]:
    return {
        "gpu": {"quota": -1, "limit": -1, "overQuotaWeight": 1},
        "cpu": {"quota": cpu[0], "limit": cpu[1], "overQuotaWeight": 1},
        "memory": {"quota": memory[0], "limit": memory[1], "overQuotaWeight": 1},
    }


def decide(req: Any, lookup: Any, **settings: Any) -> Any:
    return validate_pod_resize(req, AdmissionSettings(**settings), lookup)


def test_growth_within_the_queue_limit_is_admitted_and_past_it_refused_with_kais_reason():
    old = resized("2", "2", "2")
    assert decide(resize_request(old, "3"), objects(cpu_limit=3000)).allowed
    refused = decide(resize_request(old, "4"), objects(cpu_limit=3000))
    assert not refused.allowed and refused.code == 422
    assert refused.message == (
        "resize rejected: pod default/web (PodGroup web) CPU upsize would push queue team Allocated (2000m + 2000m) "
        "over limit (3000m)"
    )


def test_an_ancestor_queue_limit_counts_too():
    refused = decide(resize_request(resized("2", "2", "2"), "2", "3Gi"), objects(parent_memory_limit=3000))
    assert refused.message == (
        "resize rejected: pod default/web (PodGroup web) memory upsize would push queue dept Allocated (2147483648 + "
        f"{2 * GIB} bytes) over limit (3000000000 bytes)"
    )


def test_shrinking_unchanged_and_moved_requests_grow_nothing():
    old = resized("2", "2", "2")
    assert decide(resize_request(old, "1"), objects(cpu_limit=0)).allowed
    assert resize_delta(old, resize_request(old, "2").object, "Pod default/web") == {}
    two = {**old, "spec": {**old["spec"], "containers": [_container("a", "2"), _container("b", "2")]}}
    moved = {**two, "spec": {**two["spec"], "containers": [_container("a", "3"), _container("b", "1")]}}
    assert resize_delta(two, moved, "Pod default/web") == {}


def _container(name: str, cpu: str) -> dict[str, Any]:
    return {"name": name, "resources": {"requests": {"cpu": cpu}, "limits": {"cpu": cpu}}}


def test_growth_is_counted_from_what_is_charged_now():
    """A resize to 4 already charged (the kubelet has not enacted it): asking 4 again grows nothing; an Infeasible
    one is not charged, so asking 3 grows by 1 from the 2 running."""
    pending = resized("4", "2", "2")
    assert resize_delta(pending, resize_request(pending, "5").object, "p") == {"cpu": 1000.0}
    infeasible = resized("8", "2", "2", infeasible=True)
    assert resize_delta(infeasible, resize_request(infeasible, "3").object, "p") == {"cpu": 1000.0}


def test_non_preemptible_growth_is_held_to_the_quota_and_preemptible_growth_is_not():
    lookup = objects()
    store_quota = lookup("Queue", "team")
    store_quota["spec"]["resources"]["cpu"]["quota"] = 3000
    growing = resize_request(resized("2", "2", "2"), "4")
    assert decide(growing, lookup).allowed  # train: preemptible, may go over its quota
    for group in ({"priorityClassName": "build"}, {"preemptibility": "non-preemptible"}):
        strict = objects(**group)
        strict("Queue", "team")["spec"]["resources"]["cpu"]["quota"] = 3000
        assert (
            "non-preemptible CPU upsize would push queue team AllocatedNonPreemptible (2000m + 2000m) over "
            "quota (3000m)" in decide(growing, strict).message
        )


def test_block_upsize_refuses_any_growth_on_a_bounded_queue():
    growing = resize_request(resized("2", "2", "2"), "3")
    blocked = decide(growing, objects(cpu_limit=100000), block_upsize_on_bounded_queues=True)
    assert blocked.message == (
        "resize rejected: pod default/web (PodGroup web) CPU upsize not permitted on queue team with finite CPU limit "
        "(100000m)"
    )
    assert decide(growing, objects(), block_upsize_on_bounded_queues=True).allowed


def test_what_cannot_be_read_or_is_not_kais_is_admitted():
    growing = resize_request(resized("2", "2", "2"), "9")
    assert decide(growing, lambda kind, key: None).allowed  # no PodGroup: best effort, as KAI
    assert decide(growing, objects(cpu_limit=0), resize_quota_validation=False).allowed
    other = resize_request({**resized("2"), "spec": {**resized("2")["spec"], "schedulerName": "default"}}, "9")
    assert decide(other, objects(cpu_limit=0)).allowed

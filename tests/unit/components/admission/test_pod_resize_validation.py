"""The pods/resize webhook (KAI #2021): growth that would take a queue on the pod's path over its limit (a
non-preemptible pod's over its quota) is refused with KAI's reason."""

from typing import Any

from core_builders import resized_pod as resized
from webhook_support import request

from kai.components.admission.pod_resize_validation import resize_delta, validate_pod_resize
from kai.components.admission.settings import AdmissionSettings

GIB = 2**30


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

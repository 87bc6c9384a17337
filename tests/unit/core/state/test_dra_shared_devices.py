"""A DRA GPU device several pods use through one claim is counted once on its node (KAI #1931)."""

from typing import Any

from core_builders import T0, cluster, node, pod, podgroup, queue

from kai.core.state.resource_index import GPU_ROW
from kai.core.state.snapshot import take_snapshot


def _claim(name: str, consumers: list[str]) -> dict[str, Any]:
    result = {"request": "gpu", "driver": "nvidia.com/gpu", "pool": "n1", "device": "gpu-0"}
    return {
        "metadata": {"name": name, "namespace": "default", "labels": {"kai.scheduler/queue": "q"}},
        "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "nvidia.com/gpu"}}]}},
        "status": {
            "allocation": {"devices": {"results": [result]}},
            "reservedFor": [{"resource": "pods", "name": c, "uid": c} for c in consumers],
        },
    }


def _slice() -> dict[str, Any]:
    return {
        "metadata": {"name": "n1-gpus"},
        "spec": {"driver": "nvidia.com/gpu", "pool": {"name": "n1"}, "nodeName": "n1", "devices": [{"name": "gpu-0"}]},
    }


def _claiming(name: str, node_name: str = "") -> dict[str, Any]:
    raw = pod(name, name, gpus=0, node_name=node_name)
    raw["spec"]["resourceClaims"] = [{"name": "gpu", "resourceClaimName": "shared"}]
    return raw


def _state(*pods: dict[str, Any]) -> Any:
    objects: list[tuple[str, dict[str, Any]]] = [("Queue", queue("q")), ("Node", node("n1", 0))]
    objects += [("ResourceSlice", _slice()), ("ResourceClaim", _claim("shared", [p["metadata"]["name"] for p in pods]))]
    for raw in pods:
        objects += [("PodGroup", podgroup(raw["metadata"]["name"], "q", T0)), ("Pod", raw)]
    return cluster(*objects)


def test_two_running_pods_sharing_a_claim_use_its_one_gpu_once() -> None:
    table = take_snapshot(_state(_claiming("a", "n1"), _claiming("b", "n1")), "kai-scheduler", T0).nodes
    column = table.by_name["n1"].column
    assert (table.allocatable[GPU_ROW, column], table.used[GPU_ROW, column], table.idle[GPU_ROW, column]) == (1, 1, 0)
    assert table.by_name["n1"].dra_refs == {next(iter(table.by_name["n1"].dra_refs)): 2}


def test_the_device_stays_counted_until_its_last_holder_leaves() -> None:
    table = take_snapshot(_state(_claiming("a", "n1"), _claiming("b", "n1")), "kai-scheduler", T0).nodes
    info = table.by_name["n1"]
    first, second = info.tasks["default/a"], info.tasks["default/b"]
    saved = table.save(info)
    table.remove_task(first, info)
    assert table.used[GPU_ROW, info.column] == 1
    table.remove_task(second, info)
    assert (table.used[GPU_ROW, info.column], table.idle[GPU_ROW, info.column], info.dra_refs) == (0, 1, {})
    table.add_task(second, info)
    table.add_task(first, info)
    assert (table.used[GPU_ROW, info.column], table.idle[GPU_ROW, info.column]) == (1, 0)
    table.remove_task(second, info)
    table.restore(saved)  # a statement's rollback puts the holders back with the arrays
    assert (table.used[GPU_ROW, info.column], sum(info.dra_refs.values())) == (1, 2)


def test_a_pending_pod_sharing_the_device_fits_where_it_is_held_and_only_there() -> None:
    snapshot = take_snapshot(_state(_claiming("a", "n1"), _claiming("b")), "kai-scheduler", T0)
    waiting = snapshot.jobs["default/b"].tasks["default/b"]
    assert waiting.req_vec[GPU_ROW] == 1  # the claim's GPU is still charged to its queue
    assert snapshot.nodes.fits_idle(waiting).tolist() == [True]
    info = snapshot.nodes.by_name["n1"]
    snapshot.nodes.remove_task(info.tasks["default/a"], info)
    snapshot.nodes.add_task(_other_holder(snapshot), info)  # the GPU now used by a pod of another claim
    assert snapshot.nodes.fits_idle(waiting).tolist() == [False]


def _other_holder(snapshot: Any) -> Any:
    """A GPU pod on n1 holding no DRA device (takes the node's one GPU)."""
    task = snapshot.jobs["default/a"].tasks["default/a"]
    clone = type(task)(task.pod, task.status, "n1", task.job_key, task.req_vec, "default/other")
    return clone

"""A suspended workload's pods, recorded on its PodGroup, stand in as pending pods of it in the scheduler's state
while none of its own pods is alive; its own pods, once back, replace them. Its own pods still on their nodes while
the record is there are on their way out (Releasing)."""

from typing import Any

from sim_support import gpu_pod, node, queue, simulation, step

from kai.core.framework.config import SchedulerConfig
from kai.core.model import names
from kai.core.model.suspension import is_stand_in, record
from kai.core.state.cluster_state import ClusterState
from kai.core.state.snapshot import Snapshots, take_snapshot


def podgroup(recorded: str = "") -> dict[str, Any]:
    annotations = {names.SUSPENDED_PODS_ANNOTATION: recorded} if recorded else {}
    meta = {"name": "train", "namespace": "ns", "uid": "pg-uid", "annotations": annotations}
    return {"kind": "PodGroup", "metadata": meta, "spec": {"queue": "team", "minMember": 2}}


def own_pod(name: str) -> dict[str, Any]:
    pod = gpu_pod(name, "team")
    pod["metadata"]["annotations"] = {names.POD_GROUP_ANNOTATION: "train"}
    return pod


def test_stand_ins_exist_while_the_record_does_and_no_own_pod_is_alive() -> None:
    state = ClusterState()
    state.apply("PodGroup", podgroup(record([own_pod("a"), own_pod("b")])))
    assert sorted(state.pods) == ["ns/train~suspended-0", "ns/train~suspended-1"]
    assert sorted(state.pods_of("ns/train")) == sorted(state.pods)
    state.apply("Pod", own_pod("a"))  # resumed: its own pods are back
    assert sorted(state.pods) == ["ns/a"]
    state.apply("Pod", own_pod("a"), deleted=True)
    assert all(is_stand_in(key) for key in state.pods) and len(state.pods) == 2
    state.apply("PodGroup", podgroup())  # the record gone
    assert state.pods == {}


def _statuses(snapshot: Any) -> dict[str, str]:
    return {task.name: task.status.value for task in snapshot.jobs["ns/train"].tasks.values()}


def test_own_pods_still_on_their_nodes_are_releasing_while_the_record_is_there() -> None:
    """The scheduler records the pods, then suspends the workload; until its controller deletes them they still run,
    and a later cycle took them for victims again (its eviction budget spent on them again). They are on their way
    out: Releasing, as an evicted pod is."""
    state = ClusterState()
    state.apply("Queue", queue("team"))
    state.apply("Node", node("n1", 2))
    state.apply("PodGroup", podgroup())
    a, b = own_pod("a"), own_pod("b")
    a["spec"]["nodeName"], a["status"] = "n1", {"phase": "Running"}
    for pod in (a, b):
        state.apply("Pod", pod)
    snapshots = Snapshots(state, SchedulerConfig().scheduler_name)
    assert _statuses(snapshots.take()) == {"a": "Running", "b": "Pending"}
    state.apply("PodGroup", podgroup(record([a, b])))
    assert _statuses(snapshots.take()) == {"a": "Releasing", "b": "Pending"}
    assert _statuses(take_snapshot(state, SchedulerConfig().scheduler_name)) == {"a": "Releasing", "b": "Pending"}
    state.apply("PodGroup", podgroup())  # the suspension failed (the pods are evicted instead), or it is over
    assert _statuses(snapshots.take()) == {"a": "Running", "b": "Pending"}


def test_a_workload_being_suspended_is_not_taken_again_and_its_room_goes_to_the_reclaimer() -> None:
    """Queue ``b`` reclaims n1 from ``train`` (queue ``a``, over its quota of 0), whose workload was suspended for it
    last cycle: its pods still run. The reclaimer is pipelined onto what they free; nothing is evicted again."""
    recorded = [gpu_pod(f"train-{i}", "a", on="n1") for i in range(2)]
    for pod in recorded:
        pod["metadata"]["annotations"] = {names.POD_GROUP_ANNOTATION: "train"}
    train = podgroup(record(recorded))
    train["spec"]["queue"] = "a"
    sim = simulation([queue("a", 0), queue("b", 2), node("n1", 2), train, *recorded, gpu_pod("wants", "b", gpus=2)])
    result = step(sim).session.result
    assert result.evictions == []
    assert [(p.pod_key, p.node) for p in result.pipelined] == [("ns/wants", "n1")]

"""A suspended workload's pods, recorded on its PodGroup, stand in as pending pods of it in the scheduler's state
while none of its own pods is alive; its own pods, once back, replace them."""

from typing import Any

from sim_support import gpu_pod

from kai.core.model import names
from kai.core.model.suspension import is_stand_in, record
from kai.core.state.cluster_state import ClusterState


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

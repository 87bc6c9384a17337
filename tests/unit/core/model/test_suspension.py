"""Suspend instead of delete: the ``suspend`` field of each suspendable kind, and the record of a suspended
workload's pods from which the scheduler makes its stand-ins."""

from typing import Any

from sim_support import gpu_pod

from kai.core.model import names
from kai.core.model.suspension import is_suspended, record, stand_ins, suspend_patch

PODGROUP = {"kind": "PodGroup", "metadata": {"name": "train", "namespace": "ns", "uid": "pg-uid"}}


def own_pod(name: str) -> dict[str, Any]:
    pod = gpu_pod(name, "team")
    pod["metadata"]["annotations"] = {names.POD_GROUP_ANNOTATION: "train"}
    return pod


def test_the_record_keeps_each_distinct_pod_once_with_its_count_and_makes_that_many_pending_stand_ins() -> None:
    text = record([own_pod("a"), own_pod("b"), gpu_pod("other", "team", gpus=2)])
    made = stand_ins(PODGROUP, text)
    assert [p["metadata"]["name"] for p in made] == ["train~suspended-0", "train~suspended-1", "train~suspended-2"]
    assert {p["status"]["phase"] for p in made} == {"Pending"}
    assert made[0]["metadata"]["annotations"][names.POD_GROUP_ANNOTATION] == "train"
    assert stand_ins(PODGROUP, "not json") == []


def test_a_kind_with_a_suspend_field_is_patched_where_it_has_it() -> None:
    assert suspend_patch("batch/v1", "Job", True) == {"spec": {"suspend": True}}
    assert suspend_patch("kubeflow.org/v1", "PyTorchJob", False) == {"spec": {"runPolicy": {"suspend": False}}}
    assert suspend_patch("leaderworkerset.x-k8s.io/v1", "LeaderWorkerSet", True) is None


def test_a_workload_is_suspended_only_when_its_kinds_field_says_true() -> None:
    assert is_suspended("batch/v1", "Job", {"spec": {"suspend": True}})
    assert not is_suspended("batch/v1", "Job", {"spec": {"suspend": False}})
    assert is_suspended("kubeflow.org/v1", "TFJob", {"spec": {"runPolicy": {"suspend": True}}})
    assert not is_suspended("kubeflow.org/v1", "TFJob", {"spec": {"suspend": True}})  # not where TFJob keeps it
    assert not is_suspended("apps/v1", "Deployment", {"spec": {"suspend": True}})  # no such field

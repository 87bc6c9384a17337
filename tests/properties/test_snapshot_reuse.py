"""A snapshot built from the last one (``Snapshots``, as the scheduler loop takes them) equals a fresh one, after
sessions that placed, pipelined, evicted and gave up, and after changes of every kind in between.

The check is on everything a session reads (``snapshot_view``): equal views make equal decisions.
"""

from collections.abc import Callable
from dataclasses import replace
from typing import Any

import pytest
from cluster_machine import ClusterMachine
from hypothesis import HealthCheck, settings
from snapshot_view import indexes_hold, snapshot_view

from kai.core.cycle import run_cycle
from kai.core.framework.config import SchedulerConfig
from kai.core.framework.session import Session
from kai.core.model import names
from kai.core.model.meta import format_time
from kai.core.plugins.proportion.plugin import ProportionPlugin
from kai.core.state.cluster_state import ClusterState
from kai.core.state.snapshot import ClusterInfo, Snapshots, take_snapshot

T0 = 1_735_689_600.0
CONFIG = SchedulerConfig()


def _same_as_fresh(
    state: ClusterState, info: ClusterInfo, now: float, stuck_in_releasing_s: float, carry: dict[str, Any]
) -> None:
    """The snapshot equals a fresh one, and the proportion plugin's queues opened on it with charges kept in
    ``carry`` from snapshot to snapshot equal those charged task by task on the fresh one."""
    fresh = take_snapshot(state, CONFIG.scheduler_name, now, stuck_in_releasing_s)
    assert snapshot_view(info) == snapshot_view(fresh)
    indexes_hold(info)
    assert _proportion_queues(replace(info, carry=carry), now) == _proportion_queues(fresh, now, task_by_task=True)


def _proportion_queues(info: ClusterInfo, now: float, task_by_task: bool = False) -> dict[str, Any]:
    plugin = ProportionPlugin({})
    if task_by_task:
        plugin._charge_jobs = plugin._charge_tasks  # type: ignore[method-assign]
    plugin.on_session_open(Session(info, CONFIG, now))
    return {
        uid: (q.allocated, q.allocated_non_preemptible, q.request(), q.deserved(), q.fair_share(), q.max_allowed())
        for uid, q in plugin.queues.items()
    } | {"total": plugin.total}


class ReusingMachine(ClusterMachine):
    """The cluster machine, its cycles on reused snapshots, each compared with a fresh one."""

    reuse_snapshots = True

    def __init__(self) -> None:
        super().__init__()
        snapshots = self.sim.snapshots
        assert snapshots is not None
        take = snapshots.take
        carry: dict[str, Any] = {}

        def checked(now: float = 0.0, stuck_in_releasing_s: float = 120.0) -> ClusterInfo:
            info = take(now, stuck_in_releasing_s)
            _same_as_fresh(self.sim.state, info, now, stuck_in_releasing_s, carry)
            return info

        snapshots.take = checked  # type: ignore[method-assign]


ReusingMachine.TestCase.settings = settings(
    max_examples=40,
    stateful_step_count=20,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
test_reused_snapshots_equal_fresh_ones_over_many_cycles = ReusingMachine.TestCase


# ----------------------------------------------------------------------------------------- every kind of change


def _queue(name: str, parent: str = "", quota: float = -1) -> dict[str, Any]:
    unlimited = {"quota": -1, "limit": -1, "overQuotaWeight": 1}
    spec: dict[str, Any] = {
        "resources": {"gpu": {"quota": quota, "limit": -1, "overQuotaWeight": 1}, "cpu": unlimited, "memory": unlimited}
    }
    if parent:
        spec["parentQueue"] = parent
    return {"metadata": {"name": name, "creationTimestamp": format_time(T0)}, "spec": spec}


def _node(name: str, gpus: int, memory_mib: int = 40960, extra: dict[str, str] | None = None) -> dict[str, Any]:
    allocatable = {"cpu": "32", "memory": "64Gi", "nvidia.com/gpu": str(gpus), "pods": "20", **(extra or {})}
    labels = {"nvidia.com/gpu.count": str(gpus), "nvidia.com/gpu.memory": str(memory_mib)}
    return {"metadata": {"name": name, "labels": labels}, "status": {"allocatable": allocatable}}


def _podgroup(name: str, queue: str, min_member: int = 1, **extra: Any) -> dict[str, Any]:
    meta = {"name": name, "namespace": "ns", "uid": f"uid-{name}", "creationTimestamp": format_time(T0)}
    spec = {"queue": queue, "minMember": min_member, "priorityClassName": extra.pop("priority", "train"), **extra}
    return {"metadata": meta, "spec": spec}


def _pod(name: str, group: str, gpus: str = "1", node: str = "", **extra: Any) -> dict[str, Any]:
    annotations = {names.POD_GROUP_ANNOTATION: group}
    labels: dict[str, str] = {}
    requests = {"cpu": "2", "memory": "4Gi"}
    if "." in gpus:
        annotations[names.GPU_FRACTION_ANNOTATION] = gpus
        if node:
            labels[names.GPU_GROUP_LABEL] = extra.pop("gpu_group", "g0")
    elif gpus != "0":
        requests["nvidia.com/gpu"] = gpus
    requests.update(extra.pop("requests", {}))
    meta: dict[str, Any] = {
        "name": name,
        "namespace": "ns",
        "uid": f"uid-{name}",
        "creationTimestamp": format_time(T0 + extra.pop("age", 0)),
        "annotations": annotations,
        "labels": labels,
    }
    if "deleted" in extra:
        meta["deletionTimestamp"] = format_time(extra.pop("deleted"))
    spec: dict[str, Any] = {
        "schedulerName": extra.pop("scheduler", "kai-scheduler"),
        "containers": [{"name": "c", "resources": {"requests": requests}}],
    }
    if node:
        spec["nodeName"] = node
    if extra.pop("gated", False):
        spec["schedulingGates"] = [{"name": "wait"}]
    if extra.pop("lonely", False):  # no two such pods on one node
        labels["app"] = "lonely"
        term = {"labelSelector": {"matchLabels": {"app": "lonely"}}, "topologyKey": "kubernetes.io/hostname"}
        spec["affinity"] = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term]}}
    phase = extra.pop("phase", "Running" if node else "Pending")
    assert not extra, extra
    return {"metadata": meta, "spec": spec, "status": {"phase": phase}}


def _bind_request(pod: str, node: str, failed: bool = False) -> dict[str, Any]:
    status = {"phase": "Failed"} if failed else {}
    return {
        "metadata": {"name": pod, "namespace": "ns"},
        "spec": {"podName": pod, "selectedNode": node, "receivedResourceType": "Regular"},
        "status": status,
    }


def _start() -> ClusterState:
    state = ClusterState()
    objects: list[tuple[str, dict[str, Any]]] = [
        ("PriorityClass", {"metadata": {"name": "train"}, "value": 50}),
        ("PriorityClass", {"metadata": {"name": "inference"}, "value": 125}),
        ("Queue", _queue("dept")),
        ("Queue", _queue("a", "dept", 4)),
        ("Queue", _queue("b", "dept", 4)),
        ("Node", _node("n1", 4)),
        ("Node", _node("n2", 4)),
        ("Node", _node("n3", 2, memory_mib=81920)),
        ("PodGroup", _podgroup("run", "a", 2)),
        ("Pod", _pod("run-0", "run", node="n1")),
        ("Pod", _pod("run-1", "run", node="n1")),
        ("PodGroup", _podgroup("half", "b")),
        ("Pod", _pod("half-0", "half", "0.5", node="n2")),
        ("Pod", _pod("half-1", "half", "0.5", node="n2")),
        ("PodGroup", _podgroup("big", "b", 3, priority="inference")),
        *[("Pod", _pod(f"big-{i}", "big", "2", age=i)) for i in range(3)],
        ("PodGroup", _podgroup("one", "a")),
        ("Pod", _pod("one-0", "one", age=5)),
        ("Pod", _pod("alien", "", "1", node="n3", scheduler="default-scheduler")),
        ("PodGroup", _podgroup("gated", "a", 2)),
        ("Pod", _pod("gated-0", "gated")),
        ("Pod", _pod("gated-1", "gated", gated=True)),
        ("PodGroup", _podgroup("lost", "nowhere")),
        ("Pod", _pod("lost-0", "lost")),
        ("Pod", _pod("orphan-0", "orphan")),
        ("PodGroup", _podgroup("lonely", "b", 1)),
        ("Pod", _pod("lonely-0", "lonely", "0", node="n2", lonely=True)),
        ("PodGroup", _podgroup("stale", "a", 3)),
        ("Pod", _pod("stale-0", "stale", "1", node="n3")),
    ]
    for kind, raw in objects:
        state.apply(kind, raw)
    return state


Change = Callable[[ClusterState], None]


def _apply(kind: str, raw: dict[str, Any], deleted: bool = False) -> Change:
    return lambda state: state.apply(kind, raw, deleted)


CHANGES: list[tuple[str, list[Change]]] = [
    ("nothing", []),
    ("a pod arrives", [_apply("Pod", _pod("one-1", "one", age=9))]),
    ("a pod is bound", [_apply("Pod", _pod("one-0", "one", node="n2", age=5))]),
    ("a BindRequest places a pod", [_apply("BindRequest", _bind_request("one-1", "n3"))]),
    ("the BindRequest fails", [_apply("BindRequest", _bind_request("one-1", "n3", failed=True))]),
    ("the BindRequest goes", [_apply("BindRequest", _bind_request("one-1", "n3"), deleted=True)]),
    ("a pod terminates", [_apply("Pod", _pod("run-1", "run", node="n1", deleted=T0 + 5))]),
    ("a pod is deleted", [_apply("Pod", _pod("one-0", "one"), deleted=True)]),
    ("the orphan's podgroup appears", [_apply("PodGroup", _podgroup("orphan", "b"))]),
    ("a podgroup moves to a missing queue", [_apply("PodGroup", _podgroup("one", "gone"))]),
    ("the missing queue appears", [_apply("Queue", _queue("gone", "dept"))]),
    ("a queue goes", [_apply("Queue", _queue("b", "dept"), deleted=True)]),
    ("it comes back", [_apply("Queue", _queue("b", "dept", 4))]),
    ("a podgroup is re-created", [_apply("PodGroup", _podgroup("run", "a", 2), deleted=True)]),
    ("", [_apply("PodGroup", _podgroup("run", "a", 2))]),
    ("an odd fraction (its queue's sums go task by task)", [_apply("Pod", _pod("odd", "half", "0.3", node="n3"))]),
    ("it goes", [_apply("Pod", _pod("odd", "half"), deleted=True)]),
    ("a pod is re-created", [_apply("Pod", _pod("half-0", "half"), deleted=True)]),
    ("", [_apply("Pod", _pod("half-0", "half", "0.5", node="n2", gpu_group="g1"))]),
    ("a priority changes", [_apply("PriorityClass", {"metadata": {"name": "train"}, "value": 60})]),
    ("a node's GPU memory changes", [_apply("Node", _node("n3", 2, memory_mib=40960))]),
    ("a node arrives", [_apply("Node", _node("n0", 8))]),
    ("a node goes", [_apply("Node", _node("n2", 4), deleted=True)]),
    ("a new resource", [_apply("Node", _node("n1", 4, extra={"example.com/widget": "4"}))]),
    ("a pod asks for it", [_apply("Pod", _pod("widget", "one", "0", requests={"example.com/widget": "1"}))]),
    ("gates lifted", [_apply("Pod", _pod("gated-1", "gated"))]),
    ("a pod succeeds", [_apply("Pod", _pod("run-0", "run", node="n1", phase="Succeeded"))]),
    ("the pod with anti-affinity goes", [_apply("Pod", _pod("lonely-0", "lonely"), deleted=True)]),
]


def test_reused_snapshots_equal_fresh_ones_after_every_kind_of_change() -> None:
    state = _start()
    snapshots = Snapshots(state, CONFIG.scheduler_name)
    now = T0
    carry: dict[str, Any] = {}
    for what, changes in CHANGES:
        for change in changes:
            change(state)
        now += 70.0  # the terminating pod is stuck in releasing from the second cycle on
        info = snapshots.take(now, CONFIG.stuck_in_releasing_s)
        _same_as_fresh(state, info, now, CONFIG.stuck_in_releasing_s, carry)
        fresh = take_snapshot(state, CONFIG.scheduler_name, now, CONFIG.stuck_in_releasing_s)
        result = run_cycle(info, CONFIG, now).result
        assert result.unschedulable == run_cycle(fresh, CONFIG, now).result.unschedulable, what


def test_a_cycle_s_decisions_do_not_depend_on_reuse() -> None:
    """Each cycle decides as on a fresh snapshot, with the session of the last one changing everything it can."""
    state = _start()
    snapshots = Snapshots(state, CONFIG.scheduler_name)
    for n in range(3):
        now = T0 + 60 * n
        reused = run_cycle(snapshots.take(now), CONFIG, now).result
        fresh = run_cycle(take_snapshot(state, CONFIG.scheduler_name, now), CONFIG, now).result
        assert reused.binds == fresh.binds and reused.pipelined == fresh.pipelined
        assert reused.evictions == fresh.evictions and reused.pod_errors == fresh.pod_errors


def test_after_a_snapshot_that_failed_half_made_the_next_is_built_afresh(monkeypatch: Any) -> None:
    state = _start()
    snapshots = Snapshots(state, CONFIG.scheduler_name)
    run_cycle(snapshots.take(T0), CONFIG, T0)
    for change in CHANGES[1][1] + CHANGES[2][1]:
        change(state)

    def broken(*_args: Any) -> None:
        raise RuntimeError("a bug")

    with monkeypatch.context() as patch:
        patch.setattr(Snapshots, "_update_jobs", broken)
        with pytest.raises(RuntimeError):
            snapshots.take(T0 + 1)
    _same_as_fresh(state, snapshots.take(T0 + 2), T0 + 2, CONFIG.stuck_in_releasing_s, {})

"""The snapshot's bulk node accounting and its per-pod caches give what a task-by-task build gives."""

from typing import Any

import numpy as np
from core_builders import T0, cluster, node, pod, podgroup, queue

from kai.core.model import names
from kai.core.state.node_table import NodeTable
from kai.core.state.snapshot import Snapshots, take_snapshot


def _fraction(name: str, group: str, node_name: str, deleted: float | None = None) -> dict[str, Any]:
    raw = pod(name, name, gpus=0, node_name=node_name, deleted=deleted)
    raw["metadata"]["annotations"][names.GPU_FRACTION_ANNOTATION] = "0.5"
    raw["metadata"]["labels"] = {names.GPU_GROUP_LABEL: group}
    return raw


def _mixed_cluster() -> list[tuple[str, dict[str, Any]]]:
    objects: list[tuple[str, dict[str, Any]]] = [
        ("Queue", queue("q")),
        ("Node", node("n1", 4)),
        ("Node", node("n2", 4)),
    ]
    pods = [
        pod("whole-a", "whole-a", gpus=2, node_name="n1"),
        _fraction("half-a", "g1", "n1"),
        pod("leaving", "leaving", gpus=1, node_name="n1", deleted=T0 - 10),
        _fraction("half-b", "g1", "n1", deleted=T0 - 10),
        pod("whole-b", "whole-b", gpus=3, node_name="n2"),
        _fraction("half-c", "g2", "n2"),
        pod("waiting", "waiting", gpus=1),
    ]
    for raw in pods:
        name = raw["metadata"]["name"]
        objects.append(("PodGroup", podgroup(name, "q", T0)))
        objects.append(("Pod", raw))
    return objects


def test_bulk_accounting_equals_adding_each_task_in_turn() -> None:
    state = cluster(*_mixed_cluster())
    snapshot = take_snapshot(state, "kai-scheduler", T0)
    table = snapshot.nodes
    one_by_one = NodeTable(list(state.nodes.values()), table.index)
    for info in table.infos:
        for task in info.tasks.values():
            one_by_one.add_task(task, one_by_one.by_name[info.name])
    for array in ("idle", "used", "releasing"):
        np.testing.assert_array_equal(getattr(table, array), getattr(one_by_one, array), err_msg=array)
    for info, expected in zip(table.infos, one_by_one.infos, strict=True):
        assert list(info.tasks) == list(expected.tasks)
        assert info.shared.used == expected.shared.used
        assert info.shared.marked_releasing == expected.shared.marked_releasing
    assert table.shared_columns == one_by_one.shared_columns == {0, 1}
    n1 = table.by_name["n1"].column
    assert table.used[2, n1] == 3  # whole-a and leaving; the shared group counts through its groups
    assert table.releasing[2, n1] == 1  # leaving's GPU


def test_a_changed_or_deleted_pod_is_not_seen_through_the_cache() -> None:
    state = cluster(*_mixed_cluster())
    before = take_snapshot(state, "kai-scheduler", T0)
    assert before.jobs["default/whole-b"].tasks["default/whole-b"].req_vec[2] == 3
    bigger = pod("whole-b", "whole-b", gpus=4, node_name="n2")
    custom = pod("custom", "whole-b", gpus=0, node_name="n2")
    custom["spec"]["containers"][0]["resources"]["requests"]["example.com/widget"] = "2"
    state.apply("Pod", bigger)
    state.apply("Pod", custom)
    after = take_snapshot(state, "kai-scheduler", T0)
    assert after.jobs["default/whole-b"].tasks["default/whole-b"].req_vec[2] == 4
    widget = after.nodes.index.rows["example.com/widget"]
    assert after.jobs["default/whole-b"].tasks["default/custom"].req_vec[widget] == 2
    state.apply("Pod", custom, deleted=True)
    assert "example.com/widget" not in take_snapshot(state, "kai-scheduler", T0).nodes.index.rows


def test_snapshots_share_a_pod_s_read_only_request() -> None:
    state = cluster(*_mixed_cluster())
    first = take_snapshot(state, "kai-scheduler", T0).jobs["default/whole-a"].tasks["default/whole-a"].req_vec
    second = take_snapshot(state, "kai-scheduler", T0).jobs["default/whole-a"].tasks["default/whole-a"].req_vec
    assert first is second and not first.flags.writeable


def test_pods_that_ask_alike_share_one_read_only_request_vector() -> None:
    state = cluster(*_mixed_cluster(), ("Pod", pod("waiting-2", "waiting", gpus=1)))
    tasks = take_snapshot(state, "kai-scheduler", T0).jobs["default/waiting"].tasks
    alike, other = tasks["default/waiting"].req_vec, tasks["default/waiting-2"].req_vec
    assert alike is other and not alike.flags.writeable
    bigger = take_snapshot(state, "kai-scheduler", T0).jobs["default/whole-b"].tasks["default/whole-b"].req_vec
    assert bigger is not alike and bigger[2] == 3 and alike[2] == 1


def test_kept_jobs_follow_a_topology_whose_level_aliases_change() -> None:
    """Jobs name their topology levels by node label (aliases resolved as they are built); a Topology edit, which
    may move an alias, has the snapshot build its jobs again."""

    def racks(alias_of_rack: str) -> dict[str, Any]:
        levels = [{"nodeLabel": "zone", "alias": "z"}, {"nodeLabel": "rack", "alias": alias_of_rack}]
        return {"metadata": {"name": "racks"}, "spec": {"levels": levels}}

    constraint = {"topology": "racks", "requiredTopologyLevel": "r", "preferredTopologyLevel": "rack"}
    state = cluster(
        ("Topology", racks("r")),
        ("Queue", queue("q")),
        ("Node", node("n1", 4)),
        ("PodGroup", podgroup("gang", "q", T0, minMember=1, topologyConstraint=constraint)),
        ("Pod", pod("gang-0", "gang", gpus=1, node_name="n1")),  # running: a job no session touches
    )
    snapshots = Snapshots(state, "kai-scheduler")
    levels = snapshots.take(T0).jobs["default/gang"].root.topology
    assert (levels.required_level, levels.preferred_level) == ("rack", "rack")
    state.apply("Topology", racks("server-rack"))  # "r" no longer names a level: kept as written, as KAI keeps it
    assert snapshots.take(T0).jobs["default/gang"].root.topology.required_level == "r"


def test_without_full_hierarchy_fairness_one_unlimited_top_queue_holds_every_queue_with_a_parent() -> None:
    """KAI's ``--full-hierarchy-fairness=false``: the departments (parentless queues) go, with their quotas; a job
    of one has no queue to be scheduled in."""
    state = cluster(
        ("Queue", queue("d1", gpu_quota=1)),
        ("Queue", queue("d2")),
        ("Queue", queue("a", "d1")),
        ("Queue", queue("b", "d2")),
        ("PodGroup", podgroup("in-a", "a", T0)),
        ("PodGroup", podgroup("in-d1", "d1", T0)),
    )
    full = take_snapshot(state, "kai-scheduler", T0)
    assert {name: info.parent for name, info in full.queues.items()} == {"d1": "", "d2": "", "a": "d1", "b": "d2"}
    flat = take_snapshot(state, "kai-scheduler", T0, full_hierarchy_fairness=False)
    assert {name: info.parent for name, info in flat.queues.items()} == {"default": "", "a": "default", "b": "default"}
    assert flat.queues["default"].children == ["a", "b"]
    assert flat.queues["default"].queue.gpu.quota == flat.queues["default"].queue.gpu.limit == -1
    assert list(flat.jobs) == ["default/in-a"] and list(flat.unschedulable_jobs) == ["default/in-d1"]

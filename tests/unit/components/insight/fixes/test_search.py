"""Proven fixes on small clusters, one kind of change at a time: a bound raised (and on the whole path of queues),
room made by adding nodes or moving named pods, both together; what is said when nothing needs changing, when no
change can help and when the budget runs out. Every fix here was proven by a what-if run of the scheduler."""

import itertools
import threading
from pathlib import Path
from typing import Any

import pytest
import yaml
from insight_support import NOW, node_obj, pod_obj, podgroup_obj, queue_obj

from kai.components.insight.fixes.found import Budget, FixSearch, summary
from kai.components.insight.fixes.search import FixFinder, ProofFailed, within
from kai.components.insight.inspect import Inspection, inspect
from kai.components.sim.scenario import load_scenario

CLASSES = [
    {"kind": "PriorityClass", "metadata": {"name": "train"}, "value": 50},
    {"kind": "PriorityClass", "metadata": {"name": "build"}, "value": 100},
    {"kind": "PriorityClass", "metadata": {"name": "inference"}, "value": 125},
]
ROOMY = Budget(seconds=60, candidates=12)


def inspected(tmp_path: Path, *objects: dict[str, Any]) -> Inspection:
    path = tmp_path / "cluster.yaml"
    path.write_text(yaml.safe_dump({"name": "fixes", "now": NOW, "objects": [*CLASSES, *objects]}))
    return inspect(load_scenario(path))


def search(ins: Inspection, name: str, budget: Budget = ROOMY, clock: Any = lambda: 0.0) -> FixSearch:
    key = f"team/{name}"
    waits = ins.session.result.unschedulable[key]
    return FixFinder(ins, budget, clock).search(key, waits.reasons)


def proven(found: FixSearch) -> list[str]:
    return [fix.candidate.text for fix in found.proven]


def running(name: str, queue: str, gpus: int, node: str, priority: str = "train") -> list[dict[str, Any]]:
    return [podgroup_obj(name, queue, 1, priorityClassName=priority), pod_obj(f"{name}-0", name, gpus, node)]


def waiting(name: str, queue: str, gpus: int, size: int = 1, priority: str = "train") -> list[dict[str, Any]]:
    pods = [pod_obj(f"{name}-{i}", name, gpus) for i in range(size)]
    return [podgroup_obj(name, queue, size, priorityClassName=priority), *pods]


def test_a_queue_limit_is_raised_to_what_the_gang_needs(tmp_path: Path) -> None:
    ins = inspected(
        tmp_path,
        queue_obj("dept"),
        queue_obj("a", "dept", limit=4),
        node_obj("n0", 8),
        *running("first", "a", 2, "n0"),
        *waiting("big", "a", 2, size=2),
    )
    found = search(ins, "big")
    assert proven(found) == ["raise the GPU limit of queue a from 4 to 6 GPUs"]
    (fix,) = found.proven
    assert fix.candidate.changes.as_document() == {"queues": {"a": {"gpu": {"limit": 6}}}}
    assert fix.proof.started_in == 1 and fix.cost == (2.0, 0, 1)
    assert found.failed == [] and found.ran_out is None


def limited_by_parent() -> list[dict[str, Any]]:
    """dept (limit 6) → a (limit 4, holds 2), b (holds 3): a gang of 2 × 2 GPUs in a passes neither limit."""
    return [
        queue_obj("dept", limit=6),
        queue_obj("a", "dept", limit=4),
        queue_obj("b", "dept"),
        node_obj("n0", 16),
        *running("first", "a", 2, "n0"),
        *running("other", "b", 3, "n0"),
        *waiting("big", "a", 2, size=2),
    ]


def test_a_parent_limit_is_raised_on_the_whole_path(tmp_path: Path) -> None:
    """The reason names queue a; raising a alone meets dept's limit next, so the fix raises both."""
    ins = inspected(tmp_path, *limited_by_parent())
    found = search(ins, "big")
    ((tried, proof),) = found.failed
    assert tried.text == "raise the GPU limit of queue a from 4 to 6 GPUs"
    assert proof.outcome.startswith("still waits: queue dept would exceed its GPU limit")
    assert proven(found) == [
        "raise the GPU limit of queue a from 4 to 6 GPUs; raise the GPU limit of queue dept from 6 to 9 GPUs"
    ]


def test_a_non_preemptible_podgroup_gets_the_quota_it_needs(tmp_path: Path) -> None:
    ins = inspected(
        tmp_path,
        queue_obj("dept"),
        queue_obj("a", "dept", quota=2),
        node_obj("n0", 8),
        *running("serving", "a", 2, "n0", priority="build"),
        *waiting("more", "a", 2, priority="build"),
    )
    found = search(ins, "more")
    assert proven(found)[0] == "raise the GPU quota of queue a from 2 to 4 GPUs"


def test_room_by_adding_a_node_like_one_the_gang_fits_on(tmp_path: Path) -> None:
    ins = inspected(
        tmp_path,
        queue_obj("dept"),
        queue_obj("a", "dept"),
        node_obj("n0", 8),
        node_obj("small", 2),
        *running("first", "a", 6, "n0"),
        *waiting("gang", "a", 4, size=2),
    )
    found = search(ins, "gang")
    assert proven(found) == ["add 1 node like n0, 8 GPUs"]
    assert found.proven[0].candidate.changes.as_document() == {"nodes": {"add": [{"like": "n0", "count": 1}]}}


def test_room_by_moving_a_pod_to_the_node_that_has_room_for_it(tmp_path: Path) -> None:
    """Two nodes half full of non-preemptible pods (consolidation does not move those): moving one onto the other
    frees a node, with no GPU added and no pod left waiting."""
    ins = inspected(
        tmp_path,
        queue_obj("dept"),
        queue_obj("a", "dept", quota=8),
        queue_obj("b", "dept", quota=8),
        node_obj("n0", 8),
        node_obj("n1", 8),
        *running("x", "b", 4, "n0", priority="build"),
        *running("y", "b", 4, "n1", priority="build"),
        *waiting("whole", "a", 8),
    )
    found = search(ins, "whole")
    assert proven(found) == [
        "move team/x-0 off node n0 (evicted: back to pending)",
        "add 1 node like n0, 8 GPUs",
    ]
    assert found.proven[0].cost == (0.0, 1, 1)
    assert found.proven[0].candidate.changes.as_document() == {"pods": {"evict": ["team/x-0"]}}


def test_a_lower_priority_pod_may_be_moved_and_left_waiting(tmp_path: Path) -> None:
    """Neither preempt (the pods are non-preemptible) nor reclaim (queue b is within its quota) makes room; moving
    a lower-priority pod does, and that pod then waits (its podgroup comes after in line)."""
    ins = inspected(
        tmp_path,
        queue_obj("dept"),
        queue_obj("a", "dept", quota=8),
        queue_obj("b", "dept", quota=4),
        node_obj("n0", 8),
        *running("low", "a", 4, "n0", priority="build"),
        *running("other", "b", 4, "n0", priority="build"),
        *waiting("serve", "a", 4, priority="inference"),
    )
    found = search(ins, "serve")
    assert proven(found) == [
        "move team/low-0 off node n0 (evicted: back to pending)",
        "add 1 node like n0, 8 GPUs",
    ]


def test_quota_and_room_together_where_neither_alone_starts_it(tmp_path: Path) -> None:
    ins = inspected(
        tmp_path,
        queue_obj("dept"),
        queue_obj("a", "dept", quota=2),
        queue_obj("b", "dept", quota=6),
        node_obj("n0", 8),
        *running("held", "a", 2, "n0", priority="build"),
        *running("other", "b", 6, "n0", priority="build"),
        *waiting("more", "a", 2, priority="build"),
    )
    found = search(ins, "more")
    assert proven(found) == ["raise the GPU quota of queue a from 2 to 4 GPUs; add 1 node like n0, 8 GPUs"]
    ((tried, proof),) = found.failed  # room is not tried while the quota holds it: the quota's run says what room
    assert tried.text == "raise the GPU quota of queue a from 2 to 4 GPUs"
    assert proof.outcome.startswith("still waits: pod team/more-0 fits not on the only node")


def test_nothing_to_change_when_it_starts_in_the_next_cycles_anyway(tmp_path: Path) -> None:
    """A pod that ends its run time before the next cycle (the what-if's clock runs) makes room by itself."""
    ending = running("ending", "a", 8, "n0")
    ending[1]["metadata"]["annotations"]["simulate.kai.scheduler/run-time"] = "30s"
    ending[1]["status"]["startTime"] = NOW
    ins = inspected(
        tmp_path, queue_obj("dept"), queue_obj("a", "dept"), node_obj("n0", 8), *ending, *waiting("next", "a", 8)
    )
    found = search(ins, "next")
    assert found.starts_anyway == 2 and found.proven == [] and found.failed == []
    assert summary(found, ins.now) == "no change needed: it starts in cycle 2 of a what-if run as it is"


def test_a_pod_larger_than_any_node_is_not_searched(tmp_path: Path) -> None:
    ins = inspected(tmp_path, queue_obj("dept"), queue_obj("a", "dept"), node_obj("n0", 8), *waiting("huge", "a", 100))
    found = search(ins, "huge")
    assert found.held_by is not None and found.proven == [] and found.failed == []
    assert summary(found, ins.now) == (
        "none searched: no change of quota, room or nodes starts it while pod team/huge-0 asks for 100 GPUs; the "
        "largest node has 8 GPUs"
    )


def test_the_budget_ending_the_search_is_said(tmp_path: Path) -> None:
    ins = inspected(tmp_path, *limited_by_parent())
    found = search(ins, "big", Budget(seconds=60, candidates=1))
    assert found.ran_out == "candidates" and found.proven == [] and len(found.not_tried) == 1
    assert summary(found, ins.now) == (
        "no proven fix: no change of quota, room or nodes of the 1 tried starts it (1 more not tried: a larger "
        "--fix-candidates tries them)"
    )
    ticks = itertools.count(0, 20)  # the deadline at 100; the base run from 40, a candidate's from 80; out at 100
    found = search(ins, "big", Budget(seconds=100), clock=lambda: float(next(ticks)))
    assert found.ran_out == "time" and len(found.failed) == 1
    assert summary(found, ins.now).startswith(
        "no proven fix: no change of quota, room or nodes tried within 100 s starts it (1 more not tried: a longer "
        "--fix-budget tries them)"
    )


def test_a_proof_past_the_deadline_is_stopped() -> None:
    assert within(0.2, threading.Event().wait) is None  # never answers
    assert within(5, lambda: 42) == 42
    with pytest.raises(ProofFailed, match="ZeroDivisionError"):
        within(5, lambda: 1 // 0)

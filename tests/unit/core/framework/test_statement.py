"""Statement undo restores the node table exactly; the indexes of pending jobs and evictions follow every
statement."""

import random

import numpy as np

from kai.core.cycle import open_session
from kai.core.framework.config import SchedulerConfig
from kai.core.framework.statement import Operation, Statement
from kai.core.state.cluster_state import ClusterState
from kai.core.state.pod_status import PodStatus
from kai.core.state.snapshot import take_snapshot


def _state() -> ClusterState:
    state = ClusterState()
    state.apply("Queue", {"metadata": {"name": "q"}, "spec": {"resources": {"gpu": {"quota": -1, "limit": -1}}}})
    state.apply("Node", {"metadata": {"name": "n0"}, "status": {"allocatable": {"nvidia.com/gpu": "4", "pods": "9"}}})
    state.apply("PodGroup", {"metadata": {"name": "g", "namespace": "d"}, "spec": {"queue": "q", "minMember": 1}})
    state.apply(
        "Pod",
        {
            "metadata": {"name": "p", "namespace": "d", "annotations": {"pod-group-name": "g"}},
            "spec": {
                "schedulerName": "kai-scheduler",
                "containers": [{"name": "c", "resources": {"requests": {"nvidia.com/gpu": "3"}}}],
            },
        },
    )
    return state


def test_rollback_restores_accounting() -> None:
    ssn = open_session(take_snapshot(_state(), "kai-scheduler"), SchedulerConfig(), 0.0)
    before = ssn.nodes.idle.copy()
    task = ssn.jobs["d/g"].tasks["d/p"]
    stmt = Statement(ssn)
    stmt.allocate(task, "n0")
    assert ssn.nodes.idle[2, 0] == 1.0 and task.status is PodStatus.ALLOCATED
    stmt.discard()
    assert np.array_equal(ssn.nodes.idle, before)
    assert task.status is PodStatus.PENDING and task.node_name == ""


def test_a_pipelined_task_chosen_as_victim_goes_back_to_pending() -> None:
    """Nothing runs to evict: it gives back the releasing room it was pipelined onto, takes no idle room (KAI's
    releasing status would), its pipeline decision is withdrawn, and a rollback pipelines it again."""
    ssn = open_session(take_snapshot(_state(), "kai-scheduler"), SchedulerConfig(), 0.0)
    task = ssn.jobs["d/g"].tasks["d/p"]
    placed = Statement(ssn)
    placed.pipeline(task, "n0")
    placed.commit("reclaim")
    assert [p.pod_key for p in ssn.result.pipelined] == ["d/p"]
    idle, releasing = ssn.nodes.idle.copy(), ssn.nodes.releasing.copy()
    victim = Statement(ssn)
    victim.evict(task, "preempted")
    assert task.status is PodStatus.PENDING and task.node_name == ""
    assert np.array_equal(ssn.nodes.idle, idle), "the pipelined task took idle room on its way out"
    assert ssn.nodes.releasing[2, 0] == releasing[2, 0] + 3
    victim.discard()
    assert task.status is PodStatus.PIPELINED and np.array_equal(ssn.nodes.releasing, releasing)
    victim.evict(task, "preempted")
    victim.commit("preempt")
    assert ssn.result.pipelined == [] and ssn.result.evictions == []


def test_a_task_this_cycle_placed_chosen_as_victim_goes_back_to_pending() -> None:
    """Its bind is not written yet: deleting the pod would only have its controller make it again (a loop the
    property machine found); it gives its room back, its bind is withdrawn, and a rollback binds it again."""
    ssn = open_session(take_snapshot(_state(), "kai-scheduler"), SchedulerConfig(), 0.0)
    task = ssn.jobs["d/g"].tasks["d/p"]
    idle = ssn.nodes.idle.copy()
    placed = Statement(ssn)
    placed.allocate(task, "n0")
    placed.commit("allocate")
    assert [b.pod_key for b in ssn.result.binds] == ["d/p"] and task.status is PodStatus.BINDING
    victim = Statement(ssn)
    victim.evict(task, "consolidated")
    assert task.status is PodStatus.PENDING and task.node_name == "" and np.array_equal(ssn.nodes.idle, idle)
    victim.discard()
    assert task.status is PodStatus.BINDING and ssn.nodes.idle[2, 0] == 1.0
    victim.evict(task, "consolidated")
    victim.commit("consolidation")
    assert ssn.result.binds == [] and ssn.result.evictions == [] and ssn.result.bound == set()


def test_the_pending_jobs_index_follows_every_statement() -> None:
    """``Session.pending_jobs`` (indexed, so the victim search need not test every job) equals a scan of every job
    after a commit, an un-pipeline and a rollback, and keeps the jobs' order."""
    state = _state()
    for name in ("a", "b"):
        state.apply("PodGroup", {"metadata": {"name": name, "namespace": "d"}, "spec": {"queue": "q", "minMember": 1}})
        pod = {"metadata": {"name": name, "namespace": "d", "annotations": {"pod-group-name": name}}}
        state.apply("Pod", pod | {"spec": {"schedulerName": "kai-scheduler", "containers": [{"name": "c"}]}})
    ssn = open_session(take_snapshot(state, "kai-scheduler"), SchedulerConfig(), 0.0)

    def scan() -> list[str]:
        return [job.key for job in ssn.jobs.values() if job.has_pending()]

    def indexed() -> list[str]:
        return [job.key for job in ssn.pending_jobs()]

    assert indexed() == scan() == list(ssn.jobs)
    first = next(iter(ssn.jobs.values()))
    task = next(iter(first.tasks.values()))
    placed = Statement(ssn)
    placed.pipeline(task, "n0")
    placed.commit("reclaim")
    assert indexed() == scan() and first.key not in indexed()
    victim = Statement(ssn)
    victim.evict(task, "preempted")  # back to pending: the job returns to its place in the order
    assert indexed() == scan() == list(ssn.jobs)
    victim.discard()
    assert indexed() == scan() and first.key not in indexed()


def test_the_evictions_index_is_the_journal_s_evictions() -> None:
    """``Statement.evictions`` (what an un-evict looks up) is the journal's evictions grouped by task, in journal
    order, through random evictions, re-placements where the task was (un-evictions), moves, checkpoints and
    rollbacks; undone, the node table is as before."""
    state = ClusterState()
    state.apply("Queue", {"metadata": {"name": "q"}, "spec": {"resources": {"gpu": {"quota": -1, "limit": -1}}}})
    for n in range(2):
        allocatable = {"nvidia.com/gpu": "8", "pods": "20"}
        state.apply("Node", {"metadata": {"name": f"n{n}"}, "status": {"allocatable": allocatable}})
    for i in range(6):
        state.apply("PodGroup", {"metadata": {"name": f"g{i}", "namespace": "d"}, "spec": {"queue": "q"}})
        spec = {
            "schedulerName": "kai-scheduler",
            "nodeName": f"n{i % 2}",
            "containers": [{"name": "c", "resources": {"requests": {"nvidia.com/gpu": "1"}}}],
        }
        meta = {"name": f"p{i}", "namespace": "d", "annotations": {"pod-group-name": f"g{i}"}}
        state.apply("Pod", {"metadata": meta, "spec": spec, "status": {"phase": "Running"}})
    ssn = open_session(take_snapshot(state, "kai-scheduler"), SchedulerConfig(), 0.0)
    tasks = [task for job in ssn.jobs.values() for task in job.tasks.values()]
    idle, releasing = ssn.nodes.idle.copy(), ssn.nodes.releasing.copy()
    rng = random.Random(5)
    for _ in range(30):
        stmt = Statement(ssn)
        checkpoints = [0]
        for _ in range(40):
            task, move = rng.choice(tasks), rng.random()
            if move < 0.4:
                stmt.evict(task, "evicted")
            elif move < 0.7 and task.status is PodStatus.RELEASING:
                stmt.pipeline(task, task.node_name, update_if_on_node=False)
            elif move < 0.8 and task.status is PodStatus.RELEASING:
                stmt.pipeline(task, "n1" if task.node_name == "n0" else "n0", update_if_on_node=False)
            elif move < 0.9:
                checkpoints.append(stmt.checkpoint())
            else:
                stmt.rollback(checkpoints.pop() if len(checkpoints) > 1 else 0)
            journal: dict[int, list[Operation]] = {}
            for op in stmt.operations:
                if op.kind == "evict":
                    journal.setdefault(id(op.task), []).append(op)
            assert stmt.evictions == journal
        stmt.discard()
        assert stmt.evictions == {}
        assert np.array_equal(ssn.nodes.idle, idle) and np.array_equal(ssn.nodes.releasing, releasing)

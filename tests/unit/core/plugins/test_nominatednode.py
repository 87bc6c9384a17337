"""nominatednode: the node named by a pod's status.nominatedNodeName scores above all others; so, for a pod with
none, does a node the previous cycle pipelined a pod of its podgroup onto (kai's), once for each pod it pipelined."""

from typing import Any

from core_builders import T0, cluster, node, pod, podgroup
from plugin_support import QUEUES, opened, task
from sim_support import queue, simulation, step

from kai.core.framework.config import SchedulerConfig
from kai.core.framework.scores import NOMINATED_NODE
from kai.core.framework.session import Session
from kai.core.framework.statement import Statement
from kai.core.plugins.nominatednode import NominatedNodePlugin
from kai.core.state.snapshot import take_snapshot


def test_the_nominated_node_and_only_it_scores() -> None:
    nominated = pod("nominated-0", "job")
    nominated["status"]["nominatedNodeName"] = "n2"
    unknown = pod("elsewhere-0", "job")
    unknown["status"]["nominatedNodeName"] = "gone"
    ssn = opened(
        NominatedNodePlugin(),
        *(("Node", node(name, 1)) for name in ("n1", "n2", "n3")),
        ("PodGroup", podgroup("job", "q", T0, minMember=1)),
        ("Pod", nominated),
        ("Pod", unknown),
        ("Pod", pod("plain-0", "job")),
    )
    (score,) = ssn.node_order_fns
    every = ssn.nodes.fits_non_allocated(task(ssn, "plain-0"))
    assert list(score(task(ssn, "nominated-0"), every)) == [0.0, NOMINATED_NODE, 0.0]
    assert list(score(task(ssn, "elsewhere-0"), every)) == [0.0, 0.0, 0.0]
    assert list(score(task(ssn, "plain-0"), every)) == [0.0, 0.0, 0.0]


def test_a_node_the_last_cycle_pipelined_the_podgroup_onto_scores_once_per_pod_pipelined_there() -> None:
    settings = SchedulerConfig(tiers=((),))
    snapshot = take_snapshot(
        cluster(
            *QUEUES,
            *(("Node", node(name, 2)) for name in ("n1", "n2", "n3")),
            ("PodGroup", podgroup("job", "q", T0, minMember=1)),
            *(("Pod", pod(f"job-{i}", "job")) for i in range(3)),
            ("PodGroup", podgroup("other", "q", T0, minMember=1)),
            ("Pod", pod("other-0", "other")),
        ),
        settings.scheduler_name,
        T0,
    )
    snapshot.pipelined_before = {"default/job": ("n2", "n3")}
    ssn = Session(snapshot, settings, T0)
    NominatedNodePlugin().on_session_open(ssn)
    (score,) = ssn.node_order_fns
    first, second, third = (task(ssn, f"job-{i}") for i in range(3))
    every = ssn.nodes.fits_non_allocated(first)
    assert list(score(first, every)) == [0.0, NOMINATED_NODE, NOMINATED_NODE]
    assert list(score(task(ssn, "other-0"), every)) == [0.0, 0.0, 0.0]
    statement = Statement(ssn)
    statement.allocate(first, "n2")
    assert list(score(second, every)) == [0.0, 0.0, NOMINATED_NODE]
    statement.pipeline(second, "n3")
    assert list(score(third, every)) == [0.0, 0.0, 0.0]
    statement.discard()
    assert list(score(third, every)) == [0.0, NOMINATED_NODE, NOMINATED_NODE]


def _node(name: str, memory_gi: int) -> dict[str, Any]:
    allocatable = {"cpu": "8", "memory": f"{memory_gi}Gi", "pods": "2"}
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name}, "status": {"allocatable": allocatable}}


def _job(name: str, memory_gi: int, created: str, on: str = "") -> list[dict[str, Any]]:
    """A podgroup of queue ``team`` and its one pod (a CPU and ``memory_gi``), running on ``on`` if given."""
    meta = {"name": name, "namespace": "ns", "creationTimestamp": created}
    spec = {"queue": "team", "minMember": 1, "priorityClassName": "train"}
    requests = {"cpu": "1", "memory": f"{memory_gi}Gi"}
    made: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "ns", "annotations": {"pod-group-name": name}},
        "spec": {"schedulerName": "kai-scheduler", "containers": [{"name": "c", "resources": {"requests": requests}}]},
        "status": {"phase": "Running"} if on else {"phase": "Pending"},
    }
    if on:
        made["spec"]["nodeName"] = on
    return [{"apiVersion": "scheduling.run.ai/v2alpha2", "kind": "PodGroup", "metadata": meta, "spec": spec}, made]


def test_a_pod_a_consolidation_moved_goes_where_it_was_moved_to_and_nothing_loops() -> None:
    """``wants`` needs 20Gi: n1 has the memory but no pod slot (``busy`` and ``mover`` hold both), n2 a slot but
    16Gi. Consolidation moves ``mover`` to n2 and pipelines ``wants`` onto n1. ``mover`` comes back pending (made
    again by its controller) with nothing that says where it was moved to, and is placed first (its podgroup is
    older): binpack put it back on n1, the fuller node, in the slot made for ``wants``, and the next consolidation
    moved it again, every other cycle. Its podgroup's pipelined node counts as nominated: it goes to n2."""
    older, newer = "2025-01-01T00:00:00Z", "2025-01-01T00:01:00Z"
    objects = [
        queue("team"),
        _node("n1", 32),
        _node("n2", 16),
        *_job("busy", 1, older, on="n1"),
        *_job("mover", 1, older, on="n1"),
        *_job("wants", 20, newer),
    ]
    sim = simulation(objects)
    evictions = [[(e.pod_key, e.node) for e in step(sim).session.result.evictions] for _ in range(6)]
    assert evictions == [[("ns/mover", "n1")], [], [], [], [], []]
    placed = {p["metadata"]["name"]: p["spec"].get("nodeName") for p in sim.cluster.list("Pod")}
    assert placed == {"busy": "n1", "mover": "n2", "wants": "n1"}

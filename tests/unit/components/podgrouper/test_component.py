"""The pod-grouper component on the in-memory cluster: PodGroups before pods, updates as workloads change, queues
that never move, pods left alone, races retried, and malformed objects reported on the pod without a traceback."""

import logging
from collections import Counter
from typing import Any

import pytest
from podgrouper_support import NS, PRIORITY_CLASSES, obj, pod, podgroup_of, spec_of, warnings

from kai.cluster.kube.errors import AlreadyExists, Conflict
from kai.cluster.memory import MemoryCluster
from kai.cluster.port import Raw
from kai.components.podgrouper import PodGrouper

ROLE, INDEX = "training.kubeflow.org/replica-type", "training.kubeflow.org/replica-index"


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def setup(*objects: dict[str, Any]) -> tuple[MemoryCluster, PodGrouper, Clock]:
    cluster = MemoryCluster([*PRIORITY_CLASSES, *objects])
    clock = Clock()
    return cluster, PodGrouper(cluster, clock=clock), clock


def pytorch(workers: int, **spec: Any) -> dict[str, Any]:
    return obj(
        "kubeflow.org/v1", "PyTorchJob", "bert", {"pytorchReplicaSpecs": {"Worker": {"replicas": workers}}, **spec}
    )


def worker(job: dict[str, Any], index: int) -> dict[str, Any]:
    return pod(f"bert-worker-{index}", job, labels={ROLE: "worker", INDEX: str(index)})


def test_a_podgroup_exists_before_any_pod_names_it() -> None:
    job = pytorch(2)
    cluster = MemoryCluster([*PRIORITY_CLASSES, job, worker(job, 0), worker(job, 1)])
    seen: list[tuple[str, bool]] = []

    def check(kind: str, changed: Any, deleted: bool) -> None:
        named = (changed["metadata"].get("annotations") or {}).get("pod-group-name")
        if kind == "Pod" and named:
            seen.append((changed["metadata"]["name"], cluster.get("PodGroup", f"{NS}/{named}") is not None))

    cluster.subscribe(check)
    assert PodGrouper(cluster).reconcile() == 2
    assert seen == [("bert-worker-0", True), ("bert-worker-1", True)]


def test_an_elastic_job_s_podgroup_follows_its_replicas_but_never_its_queue() -> None:
    job = pytorch(2)
    job["metadata"]["labels"] = {"kai.scheduler/queue": "equipe-training"}
    cluster, grouper, _ = setup(job, worker(job, 0), worker(job, 1))
    grouper.reconcile()
    assert spec_of(cluster, "bert-worker-0")[1]["minMember"] == 2

    scaled = cluster.get("PyTorchJob", f"{NS}/bert")
    assert scaled is not None
    scaled["spec"]["pytorchReplicaSpecs"]["Worker"]["replicas"] = 4
    scaled["metadata"]["labels"]["kai.scheduler/queue"] = "equipe-inference"
    cluster.update("PyTorchJob", scaled)
    for index in (2, 3):
        cluster.create("Pod", worker(job, index))
    assert grouper.reconcile() == 2
    name, spec = spec_of(cluster, "bert-worker-3")
    assert (name, spec["minMember"], spec["queue"]) == ("pg-bert-uid-bert", 4, "equipe-training")
    assert podgroup_of(cluster, "bert-worker-3")["metadata"]["labels"]["kai.scheduler/queue"] == "equipe-training"

    shrunk = cluster.get("PyTorchJob", f"{NS}/bert")
    assert shrunk is not None
    shrunk["spec"]["pytorchReplicaSpecs"]["Worker"]["replicas"] = 3
    cluster.update("PyTorchJob", shrunk)
    cluster.finalize("Pod", f"{NS}/bert-worker-3")  # the last worker goes: a sibling is grouped again
    grouper.reconcile()
    assert spec_of(cluster, "bert-worker-0")[1]["minMember"] == 3


def test_an_update_keeps_what_others_own() -> None:
    job = obj("batch/v1", "Job", "etl", annotations={"kai.scheduler/batch-min-member": "2"})
    existing = {
        "apiVersion": "scheduling.run.ai/v2alpha2",
        "kind": "PodGroup",
        "metadata": {
            "name": "pg-etl-uid-etl",
            "namespace": NS,
            "labels": {"kai.scheduler/node-pool": "a100", "team": "vision"},
            "annotations": {"kai.scheduler/last-start-timestamp": "2026-01-01T00:00:00Z"},
        },
        "spec": {
            "minMember": 1,
            "queue": "moved-by-hand",
            "markUnschedulable": False,
            "schedulingBackoff": 1,
            "topologyConstraint": {"topology": "cluster", "requiredTopologyLevel": "rack"},
        },
    }
    task = pod("etl-x", job, labels={"kai.scheduler/node-pool": "h100", "kai.scheduler/queue": "other"})
    cluster, grouper, _ = setup(existing, job, task)
    grouper.reconcile()
    podgroup = podgroup_of(cluster, "etl-x")
    assert podgroup["spec"] == {
        "minMember": 2,
        "queue": "moved-by-hand",
        "priorityClassName": "train",
        "markUnschedulable": False,
        "schedulingBackoff": 1,
        "topologyConstraint": {"topology": "cluster", "requiredTopologyLevel": "rack"},
    }
    assert podgroup["metadata"]["labels"] == {"kai.scheduler/node-pool": "a100", "team": "vision"}
    assert podgroup["metadata"]["annotations"]["kai.scheduler/last-start-timestamp"] == "2026-01-01T00:00:00Z"
    assert podgroup["metadata"]["ownerReferences"][0]["name"] == "etl"


def test_a_new_podgroup_takes_the_node_pool_of_its_pod() -> None:
    cluster, grouper, _ = setup(pod("p", labels={"kai.scheduler/node-pool": "a100"}))
    grouper.reconcile()
    assert podgroup_of(cluster, "p")["metadata"]["labels"] == {"kai.scheduler/node-pool": "a100"}


def test_a_deleted_podgroup_is_made_again() -> None:
    job = pytorch(1)
    cluster, grouper, _ = setup(job, worker(job, 0))
    grouper.reconcile()
    cluster.finalize("PodGroup", f"{NS}/pg-bert-uid-bert")
    grouper.reconcile()
    assert spec_of(cluster, "bert-worker-0")[0] == "pg-bert-uid-bert"


def test_an_ownerless_pod_s_deleted_podgroup_is_made_again_but_a_user_s_is_not() -> None:
    """The pod-grouper's own ``pg-<pod>-<uid>`` comes back (KAI would leave the pod without a PodGroup); a PodGroup a
    user named on an ownerless pod is the user's, gone or not."""
    cluster, grouper, _ = setup(pod("single"), pod("joins", annotations={"pod-group-name": "mine"}))
    grouper.reconcile()
    own = f"{NS}/pg-single-uid-single"
    assert cluster.get("PodGroup", own) is not None
    cluster.finalize("PodGroup", own)
    grouper.reconcile()
    assert cluster.get("PodGroup", own) is not None
    assert spec_of(cluster, "single")[0] == "pg-single-uid-single"
    assert cluster.get("PodGroup", f"{NS}/mine") is None


def test_pods_the_pod_grouper_leaves_alone() -> None:
    external = {"pod-group-name": "pipeline"}
    skipper = obj("batch/v1", "Job", "evaluation", annotations={"kai.scheduler/skip-podgrouper": "true"})
    job = obj("batch/v1", "Job", "etl")
    cluster, grouper, _ = setup(
        pod("joins-external", annotations=external),
        pod("opted-out", annotations={"kai.scheduler/skip-podgrouper": "true"}),
        skipper,
        pod("evaluation-x", skipper, annotations=external),
        pod("other-scheduler", schedulerName="default-scheduler"),
        job,
        pod("etl-x", job),
    )
    grouper.reconcile()
    assert [pg["metadata"]["name"] for pg in cluster.list("PodGroup")] == ["pg-etl-uid-etl"]
    for name in ("joins-external", "evaluation-x"):
        current = cluster.get("Pod", f"{NS}/{name}")
        assert current is not None and current["metadata"]["annotations"]["pod-group-name"] == "pipeline"
    assert cluster.list("Event") == []


def test_a_terminating_pod_is_not_grouped() -> None:
    leaving = pod("leaving")
    leaving["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    cluster, grouper, _ = setup(leaving)
    assert grouper.reconcile() == 0
    assert cluster.list("PodGroup") == []


@pytest.mark.parametrize(
    ("mutate", "message"),
    [
        (lambda p: p.update(spec="oops"), "Pod ml/bad: field spec: got 'oops'; expected a mapping"),
        (
            lambda p: p["metadata"].update(labels=["a", "b"]),
            "Pod ml/bad: field metadata.labels: got ['a', 'b']; expected a mapping",
        ),
        (
            lambda p: p["metadata"].update(ownerReferences=["job"]),
            "Pod ml/bad: field metadata.ownerReferences[0]: got 'job'; expected a mapping",
        ),
        (
            lambda p: p["metadata"].update(ownerReferences=[{"apiVersion": "batch/v1", "kind": "Job", "uid": "u"}]),
            "Pod ml/bad: field metadata.ownerReferences[0].name: is required",
        ),
        (
            lambda p: p["metadata"].update(
                ownerReferences=[{"apiVersion": "batch/v1", "kind": "Job", "name": "gone", "uid": "uid-gone"}]
            ),
            "Pod ml/bad: field metadata.ownerReferences[0]: names Job ml/gone (uid uid-gone), which does not exist",
        ),
        (
            lambda p: p["metadata"].update(
                ownerReferences=[{"apiVersion": "batch/v1", "kind": "Job", "name": "etl", "uid": "an-older-etl"}]
            ),
            "Pod ml/bad: field metadata.ownerReferences[0]: names Job ml/etl (uid an-older-etl), which does not exist",
        ),
    ],
)
def test_a_malformed_pod_is_reported_on_it_and_the_others_are_grouped(
    mutate: Any, message: str, caplog: pytest.LogCaptureFixture
) -> None:
    bad = pod("bad")
    mutate(bad)
    job = obj("batch/v1", "Job", "etl")
    cluster, grouper, _ = setup(bad, job, pod("etl-x", job))
    with caplog.at_level(logging.WARNING, logger=PodGrouper.__module__):
        grouper.reconcile()
    assert warnings(cluster, "bad") == [message]
    [event] = [e for e in cluster.list("Event") if e["involvedObject"]["name"] == "bad"]
    assert event["involvedObject"] == {
        "apiVersion": "v1",
        "kind": "Pod",
        "name": "bad",
        "namespace": NS,
        "uid": "uid-bad",
    }
    assert event["type"] == "Warning" and event["source"] == {"component": "pod-grouper"}
    assert spec_of(cluster, "etl-x")[0] == "pg-etl-uid-etl"
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR or r.exc_info]


def test_a_pod_without_a_name_is_logged_and_the_others_are_grouped(caplog: pytest.LogCaptureFixture) -> None:
    cluster = MemoryCluster([*PRIORITY_CLASSES, pod("good")])
    cluster.create("Pod", {"kind": "Pod", "metadata": {"namespace": NS}, "spec": {"schedulerName": "kai-scheduler"}})
    with caplog.at_level(logging.WARNING, logger=PodGrouper.__module__):
        PodGrouper(cluster).reconcile()
    assert spec_of(cluster, "good")[0] == "pg-good-uid-good"
    assert any("without metadata.name" in r.getMessage() for r in caplog.records)
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR or r.exc_info]


def test_owners_with_two_owners_or_owning_themselves_are_reported() -> None:
    a = obj("example.com/v1", "Widget", "a")
    b = obj("example.com/v1", "Widget", "b", owner=a)
    a["metadata"]["ownerReferences"] = [b["metadata"]["ownerReferences"][0] | {"name": "b", "uid": "uid-b"}]
    twice = obj("apps/v1", "ReplicaSet", "twice")
    twice["metadata"]["ownerReferences"] = [
        {"apiVersion": "apps/v1", "kind": "Deployment", "name": "x", "uid": "1"},
        {"apiVersion": "apps/v1", "kind": "Deployment", "name": "y", "uid": "2"},
    ]
    cluster, grouper, _ = setup(a, b, pod("loop", b), twice, pod("twice-x", twice))
    grouper.reconcile()
    assert warnings(cluster, "loop") == [
        "Widget ml/a: field metadata.ownerReferences[0]: Widget ml/b owns itself (the ownerReferences form a cycle)"
    ]
    assert warnings(cluster, "twice-x") == [
        "ReplicaSet ml/twice: field metadata.ownerReferences: has 2 owners (Deployment x, Deployment y); at most one "
        "is supported"
    ]


def test_a_problem_is_told_once_and_retried_with_backoff_until_it_is_fixed() -> None:
    task = pod("etl-x")
    task["metadata"]["ownerReferences"] = [{"apiVersion": "batch/v1", "kind": "Job", "name": "etl", "uid": "uid-etl"}]
    cluster, grouper, clock = setup(task)
    grouper.reconcile()
    assert len(warnings(cluster, "etl-x")) == 1
    cluster.create("Job", obj("batch/v1", "Job", "etl"))
    assert grouper.reconcile() == 0  # not yet: the retry waits its second
    clock.now += 1.0
    assert grouper.reconcile() == 1
    assert spec_of(cluster, "etl-x")[0] == "pg-etl-uid-etl"
    assert len(warnings(cluster, "etl-x")) == 1


class CountingCluster(MemoryCluster):
    """An in-memory cluster that counts the reads of each kind (how often the pod-grouper tried a pod again)."""

    def __init__(self, objects: list[dict[str, Any]]) -> None:
        super().__init__(objects)
        self.reads: Counter[str] = Counter()

    def get(self, kind: str, key: str) -> Raw | None:
        self.reads[kind] += 1
        return super().get(kind, key)


def test_a_failing_pod_is_retried_less_and_less_often_but_at_once_when_it_changes() -> None:
    task = pod("etl-x")
    task["metadata"]["ownerReferences"] = [{"apiVersion": "batch/v1", "kind": "Job", "name": "etl", "uid": "uid-etl"}]
    cluster = CountingCluster([*PRIORITY_CLASSES, task])
    clock = Clock()
    grouper = PodGrouper(cluster, clock=clock)
    attempts = []
    for elapsed in (0.0, 0.5, 1.0, 2.0, 3.0, 6.0, 7.0):
        clock.now = 1000.0 + elapsed
        grouper.reconcile()
        attempts.append(cluster.reads["Job"])
    assert attempts == [1, 1, 2, 2, 3, 3, 4]  # after 1 s, then 2 s, then 4 s
    changed = cluster.get("Pod", f"{NS}/etl-x")
    assert changed is not None
    changed["metadata"]["labels"] = {"kai.scheduler/queue": "equipe-training"}
    cluster.update("Pod", changed)
    grouper.reconcile()
    assert cluster.reads["Job"] == 5
    assert len(warnings(cluster, "etl-x")) == 1


class RacingCluster(MemoryCluster):
    """An in-memory cluster where another writer gets to each PodGroup first: its first create of a PodGroup is
    beaten by another replica's (AlreadyExists) and its first update by the scheduler's annotation (Conflict)."""

    def __init__(self, objects: list[dict[str, Any]]) -> None:
        super().__init__(objects)
        self.raced: list[str] = []

    def create(self, kind: str, obj: Raw) -> Raw:
        if kind == "PodGroup" and "create" not in self.raced:
            self.raced.append("create")
            super().create(kind, obj)
            raise AlreadyExists(409, "AlreadyExists", "podgroups already exists")
        return super().create(kind, obj)

    def update(self, kind: str, obj: Raw) -> Raw:
        if kind == "PodGroup" and "update" not in self.raced:
            self.raced.append("update")
            raise Conflict(409, "Conflict", "the object has been modified")
        return super().update(kind, obj)


def test_a_podgroup_someone_else_wrote_first_is_a_retry_not_an_error(caplog: pytest.LogCaptureFixture) -> None:
    job = pytorch(1)
    cluster = RacingCluster([*PRIORITY_CLASSES, job, worker(job, 0)])
    grouper = PodGrouper(cluster)
    with caplog.at_level(logging.DEBUG, logger=PodGrouper.__module__):
        assert grouper.reconcile() == 0
        scaled = cluster.get("PyTorchJob", f"{NS}/bert")
        assert scaled is not None
        scaled["spec"]["pytorchReplicaSpecs"]["Worker"]["replicas"] = 2
        cluster.update("PyTorchJob", scaled)
        cluster.create("Pod", worker(job, 1))
        # worker 0 again after the lost create: its update conflicts; worker 1's goes through; worker 0 next pass
        assert [grouper.reconcile(), grouper.reconcile()] == [1, 1]
    assert cluster.raced == ["create", "update"]
    assert spec_of(cluster, "bert-worker-1")[1]["minMember"] == 2
    assert cluster.list("Event") == []
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING or r.exc_info]


def test_a_pod_is_pointed_at_its_podgroup_as_soon_as_that_is_written_and_pods_queued_meanwhile_join_the_pass() -> None:
    first = [pod(f"early-{i}") for i in range(3)]
    cluster = MemoryCluster([*PRIORITY_CLASSES, *first])
    writes: list[str] = []

    def arrive_meanwhile(kind: str, changed: Any, deleted: bool) -> None:
        name = changed["metadata"]["name"]
        if kind == "PodGroup":
            writes.append("podgroup")
        elif kind == "Pod" and (changed["metadata"].get("annotations") or {}).get("pod-group-name"):
            writes.append(name)
            if name == "early-0":  # a pod created while the pass runs: grouped by the same pass, after the queue
                cluster.create("Pod", pod("late"))

    grouper = PodGrouper(cluster)
    cluster.subscribe(arrive_meanwhile)
    assert grouper.reconcile() == len(first) + 1
    names = [p["metadata"]["name"] for p in first] + ["late"]
    assert writes == [write for name in names for write in ("podgroup", name)]
    assert len({podgroup_of(cluster, name)["metadata"]["name"] for name in names}) == len(names)


class BrokenOnceCluster(MemoryCluster):
    """A cluster whose first PodGroup create fails as a bug would (not an API answer)."""

    def __init__(self, objects: list[dict[str, Any]]) -> None:
        super().__init__(objects)
        self.broke = False

    def create(self, kind: str, obj: Raw) -> Raw:
        if kind == "PodGroup" and not self.broke:
            self.broke = True
            raise RuntimeError("bug")
        return super().create(kind, obj)


def test_a_podgroup_whose_write_broke_is_written_again_next_pass(caplog: pytest.LogCaptureFixture) -> None:
    job = pytorch(2)
    cluster = BrokenOnceCluster([*PRIORITY_CLASSES, job, worker(job, 0), worker(job, 1)])
    grouper = PodGrouper(cluster)
    with caplog.at_level(logging.ERROR):
        assert grouper.reconcile() == 1  # worker 0's write broke (logged); worker 1 wrote it and was pointed
    assert "group pod" in caplog.text and "bug" in caplog.text
    assert grouper.reconcile() == 1  # worker 0, again
    assert podgroup_of(cluster, "bert-worker-0") == podgroup_of(cluster, "bert-worker-1")

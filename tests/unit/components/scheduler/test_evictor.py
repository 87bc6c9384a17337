"""The evictor sends each decision through the Eviction API as one unit: the pods a PodDisruptionBudget covers first
(a refusal withdraws the rest of the decision), an opted-in workload evicted whole is suspended instead, and each
eviction leaves its audit (events, the PodGroup's record). On the embedded cluster, whose eviction subresource
judges PDBs as the API server does."""

import json
from typing import Any

from sim_support import gpu_pod, pdb

from kai.cluster.memory import MemoryCluster
from kai.components.scheduler.evictor import Evictor, workload
from kai.components.shared.parallel import Writes
from kai.core.framework.decisions import Eviction
from kai.core.model import names
from kai.core.model.objects import OwnerRef

VISION = {"app": "vision"}


class Events(list[tuple[str, str, str, str, str]]):
    def __call__(self, kind: str, key: str, event_type: str, reason: str, message: str) -> None:
        self.append((kind, key, event_type, reason, message))


def cluster(allowed: int, *pods: dict[str, Any]) -> MemoryCluster:
    """Running pods and a PodGroup per pod (``pg-<pod>``); a PDB over the vision pods whose status allows
    ``allowed`` disruptions."""
    made = MemoryCluster(clock=lambda: "2026-01-01T00:00:00Z")
    budget = pdb("vision", VISION, minAvailable=1)
    budget["status"] = {"disruptionsAllowed": allowed, "currentHealthy": 3, "desiredHealthy": 1}
    made.create("PodDisruptionBudget", budget)
    for pod in pods:
        made.create("Pod", pod)
        podgroup = {"metadata": {"name": f"pg-{pod['metadata']['name']}", "namespace": "ns"}, "spec": {}}
        made.create("PodGroup", podgroup)
    return made


def eviction(pod: str, budgets: tuple[str, ...] = (), podgroup: str = "", **fields: Any) -> Eviction:
    defaults = {"action": "reclaim", "message": f"Pod ns/{pod} was preempted.", "evictor": "ns/llm"}
    return Eviction(f"ns/{pod}", podgroup or f"ns/pg-{pod}", "n1", why="team-vision over its fair share by 2 GPUs",
                    budgets=budgets, **{**defaults, **fields})  # fmt: skip


def evictor(made: MemoryCluster, events: Events, through_api: bool = True) -> Evictor:
    return Evictor(made, events, lambda: 1_767_225_600.0, through_api)


def deleting(made: MemoryCluster) -> list[str]:
    return sorted(p["metadata"]["name"] for p in made.list("Pod") if p["metadata"].get("deletionTimestamp"))


def test_a_decision_its_pdb_no_longer_allows_is_withdrawn_before_any_pod_goes() -> None:
    made = cluster(0, *(gpu_pod(f"v{i}", "team-vision", on="n1", labels=VISION) for i in range(2)))
    made.create("Pod", gpu_pod("free", "team-vision", on="n1"))
    made.create("PodGroup", {"metadata": {"name": "pg-free", "namespace": "ns"}, "spec": {}})
    events = Events()
    decision = [eviction("free"), eviction("v0", ("ns/vision",)), eviction("v1", ("ns/vision",))]
    sent = evictor(made, events).send(decision, {"ns/pg-v0": 1.0}, Writes())
    assert sent.evicted == [] and len(sent.refused) == 3
    assert deleting(made) == []  # the dry run of the covered pods refused: nothing sent, not even the free one
    refused = [e for e in events if e[3] == "EvictionRefused"]
    assert {e[1] for e in refused} == {"ns/llm", "ns/pg-free", "ns/pg-v0", "ns/pg-v1"}
    assert "The disruption budget vision needs 1 healthy pods and has 3 currently" in refused[0][4]
    pg = made.get("PodGroup", "ns/pg-v0")
    assert pg is not None and not pg["metadata"].get("annotations")  # no record, no last-eviction time


def test_a_refusal_after_the_first_covered_pod_keeps_the_rest_of_the_decision_back() -> None:
    made = cluster(1, gpu_pod("v0", "team-vision", on="n1", labels=VISION))
    made.create("Pod", gpu_pod("free", "team-vision", on="n1"))
    made.create("PodGroup", {"metadata": {"name": "pg-free", "namespace": "ns"}, "spec": {}})
    made.create("Pod", gpu_pod("v1", "team-vision", on="n1", labels=VISION))
    made.create("PodGroup", {"metadata": {"name": "pg-v1", "namespace": "ns"}, "spec": {}})
    decision = [eviction("free"), eviction("v0", ("ns/vision",)), eviction("v1", ("ns/vision",))]
    sent = evictor(made, Events()).send(decision, {}, Writes())  # the dry run passes: each alone would go
    assert [e.pod_key for e in sent.evicted] == ["ns/v0"]
    assert [e.pod_key for e, _ in sent.refused] == ["ns/free", "ns/v1"]
    assert deleting(made) == ["v0"]
    budget = made.get("PodDisruptionBudget", "ns/vision")
    assert budget is not None and budget["status"]["disruptionsAllowed"] == 0
    assert list(budget["status"]["disruptedPods"]) == ["v0"]


def test_each_eviction_is_told_with_who_and_why_and_recorded_on_its_podgroup() -> None:
    made = cluster(1, gpu_pod("v0", "team-vision", on="n1"))
    events = Events()
    evictor(made, events).send([eviction("v0")], {"ns/pg-v0": 1_767_225_600.0}, Writes())
    told = [e for e in events if e[3] == "Evict"]
    audit = "evicted by reclaim for ns/llm: team-vision over its fair share by 2 GPUs\nPod ns/v0 was preempted."
    assert told == [("Pod", "ns/v0", "Normal", "Evict", audit), ("PodGroup", "ns/pg-v0", "Normal", "Evict", audit)]
    pg = made.get("PodGroup", "ns/pg-v0")
    assert pg is not None
    annotations = pg["metadata"]["annotations"]
    assert json.loads(annotations[names.EVICTION_RECORD_ANNOTATION]) == {
        "at": "2026-01-01T00:00:00Z",
        "action": "reclaim",
        "by": "ns/llm",
        "why": "team-vision over its fair share by 2 GPUs",
        "pods": 1,
        "suspended": "",
        "recent": [["2026-01-01T00:00:00Z", 1]],
    }
    assert annotations[names.LAST_EVICTION_ANNOTATION] == "2026-01-01T00:00:00Z"


def test_the_record_keeps_the_minutes_evictions_for_the_per_minute_budget_whoever_looks() -> None:
    made = cluster(5, gpu_pod("v0", "team-vision", on="n1"))
    now = [0.0]
    sending = Evictor(made, Events(), lambda: now[0], True)
    for at in (0.0, 30.0, 70.0):
        now[0] = at
        made.create("Pod", gpu_pod(f"again-{int(at)}", "team-vision", on="n1"))
        sending.send([eviction(f"again-{int(at)}", podgroup="ns/pg-v0")], {}, Writes())
    pg = made.get("PodGroup", "ns/pg-v0")
    assert pg is not None
    record = json.loads(pg["metadata"]["annotations"][names.EVICTION_RECORD_ANNOTATION])
    assert record["recent"] == [["1970-01-01T00:00:30Z", 1], ["1970-01-01T00:01:10Z", 1]]  # 0s is out of the minute


def test_with_pdbs_off_pods_are_deleted_as_kai_does() -> None:
    made = cluster(0, gpu_pod("v0", "team-vision", on="n1", labels=VISION))
    sent = evictor(made, Events(), through_api=False).send([eviction("v0", ("ns/vision",))], {}, Writes())
    assert [e.pod_key for e in sent.evicted] == ["ns/v0"] and deleting(made) == ["v0"]


def test_an_opted_in_workload_evicted_whole_is_suspended_and_its_pods_recorded() -> None:
    pods = [gpu_pod(f"w{i}", "team-vision", on="n1") for i in range(2)]
    made = MemoryCluster()
    job = {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "train", "namespace": "ns"}, "spec": {}}
    made.create("Job", job)
    made.create("PodGroup", {"metadata": {"name": "pg-train", "namespace": "ns"}, "spec": {}})
    for pod in pods:
        made.create("Pod", pod)
    owner = OwnerRef("batch/v1", "Job", "train", "uid")
    group = [eviction(f"w{i}", suspend=owner, evictor=f"ns/llm-{i}") for i in range(2)]
    group = [
        Eviction(e.pod_key, "ns/pg-train", e.node, e.action, e.message, e.evictor, e.why, suspend=owner) for e in group
    ]
    sent = evictor(made, Events()).send(group, {}, Writes())
    assert sent.suspended == {"ns/pg-train"} and len(sent.evicted) == 2 and deleting(made) == []
    suspended = made.get("Job", "ns/train")
    assert suspended is not None and suspended["spec"]["suspend"] is True
    podgroup = made.get("PodGroup", "ns/pg-train")
    assert podgroup is not None
    [entry] = json.loads(podgroup["metadata"]["annotations"][names.SUSPENDED_PODS_ANNOTATION])
    assert entry["count"] == 2 and entry["pod"]["spec"]["containers"][0]["resources"]["limits"] == {
        "nvidia.com/gpu": "1"
    }
    assert json.loads(podgroup["metadata"]["annotations"][names.EVICTION_RECORD_ANNOTATION])["suspended"] == "Job train"


def test_a_workload_that_cannot_be_suspended_loses_its_pods_instead() -> None:
    made = MemoryCluster()
    made.create("PodGroup", {"metadata": {"name": "pg-train", "namespace": "ns"}, "spec": {}})
    made.create("Pod", gpu_pod("w0", "team-vision", on="n1"))
    owner = OwnerRef("batch/v1", "Job", "gone", "uid")
    decision = [eviction("w0", podgroup="ns/pg-train", suspend=owner)]
    sent = evictor(made, Events()).send(decision, {}, Writes())
    assert sent.suspended == set() and deleting(made) == ["w0"]
    podgroup = made.get("PodGroup", "ns/pg-train")
    assert podgroup is not None and names.SUSPENDED_PODS_ANNOTATION not in podgroup["metadata"]["annotations"]


def test_the_last_minute_of_evictions_is_counted_for_the_per_minute_budget() -> None:
    made = cluster(5, *(gpu_pod(f"v{i}", "team-vision", on="n1") for i in range(3)))
    now = [0.0]
    sending = Evictor(made, Events(), lambda: now[0], True)
    sending.send([eviction("v0"), eviction("v1")], {}, Writes())
    now[0] = 30.0
    sending.send([eviction("v2")], {}, Writes())
    assert (sending.recent(59.0), sending.recent(60.0), sending.recent(90.0)) == (3, 1, 0)


class KubeNames(MemoryCluster):
    """The embedded cluster naming kinds as the kube adapter does: a custom resource only as ``Kind.version.group``
    (its bare kind is unknown to it)."""

    CUSTOM = frozenset({"RayJob"})

    def get(self, kind: str, key: str) -> dict[str, Any] | None:
        if kind in self.CUSTOM:
            raise ValueError(f"unknown kind {kind!r}")
        return super().get(kind, key)


def test_a_custom_resource_workload_is_found_and_suspended_under_its_qualified_kind() -> None:
    made = KubeNames()
    rayjob = {"apiVersion": "ray.io/v1", "kind": "RayJob", "metadata": {"name": "tune", "namespace": "ns"}}
    made.create("RayJob.v1.ray.io", {**rayjob, "spec": {}})
    made.create("Job", {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "train", "namespace": "ns"}})
    owner = OwnerRef("ray.io/v1", "RayJob", "tune", "uid")
    found = workload(made, owner, "ns")
    assert found is not None and found[0] == "RayJob.v1.ray.io"
    assert workload(made, OwnerRef("batch/v1", "Job", "train", "uid"), "ns") is not None  # one of kai's kinds: bare
    assert workload(made, OwnerRef("other.io/v1", "Job", "train", "uid"), "ns") is None  # same name, other group
    made.create("PodGroup", {"metadata": {"name": "pg-tune", "namespace": "ns"}, "spec": {}})
    made.create("Pod", gpu_pod("tune-head", "team-vision", on="n1"))
    decision = [eviction("tune-head", podgroup="ns/pg-tune", suspend=owner)]
    assert evictor(made, Events()).send(decision, {}, Writes()).suspended == {"ns/pg-tune"}
    suspended = made.get("RayJob.v1.ray.io", "ns/tune")
    assert suspended is not None and suspended["spec"]["suspend"] is True

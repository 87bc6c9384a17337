"""The Queue, PodGroup and Topology webhooks' decisions, each refusal naming the field and what is allowed."""

from typing import Any

import pytest
from admission_support import request

from kai.components.admission.podgroup_validation import validate_podgroup
from kai.components.admission.queue_validation import validate_queue
from kai.components.admission.queues import QueueCache
from kai.components.admission.review import allow
from kai.components.admission.settings import AdmissionSettings
from kai.components.admission.topology_validation import validate_topology
from kai.core.model.objects import Queue, parse_queue

UNLIMITED = {"quota": -1, "limit": -1, "overQuotaWeight": 1}


def queue(name: str, parent: str = "", **resources: dict[str, float]) -> dict[str, Any]:
    spec: dict[str, Any] = {"resources": {r: resources.get(r, UNLIMITED) for r in ("gpu", "cpu", "memory")}}
    if parent:
        spec["parentQueue"] = parent
    return {"apiVersion": "scheduling.run.ai/v2", "kind": "Queue", "metadata": {"name": name}, "spec": spec}


def cluster(*raws: dict[str, Any]) -> dict[str, Queue]:
    return {raw["metadata"]["name"]: parse_queue(raw) for raw in raws}


OFF = AdmissionSettings()


def decide(raw: dict[str, Any], queues: dict[str, Queue], settings: AdmissionSettings = OFF, **kw: Any):
    return validate_queue(request("Queue", raw, **kw), queues, set(), settings)


TREE = cluster(queue("dept"), queue("team", "dept"))


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ({"metadata": {"name": "q"}, "spec": {}}, "Queue q: field spec.resources: is required: gpu, cpu and memory"),
        (queue("q", "dept", gpu={"quota": -5, "limit": -1}), "field spec.resources.gpu.quota: got -5; allowed: -1"),
        (queue("q", "dept", cpu={"quota": 4000, "limit": 2000}),
         "field spec.resources.cpu.limit: got 2000, below the quota 4000; allowed: -1 (unlimited) or at least"),
        (queue("q", "nowhere"), "field spec.parentQueue: parent queue 'nowhere' does not exist"),
        (queue("dept", "team"), "field spec.parentQueue: parent cycle dept → team → dept"),
    ],
)  # fmt: skip
def test_bad_queues_are_refused(raw: dict[str, Any], message: str) -> None:
    decision = decide(raw, TREE)
    assert not decision.allowed
    assert message in decision.message


def test_good_queues_pass_and_a_negative_weight_is_a_warning() -> None:
    assert decide(queue("team2", "dept", gpu={"quota": 2, "limit": 4, "overQuotaWeight": 1}), TREE).allowed
    decision = decide(queue("team3", "dept", gpu={"quota": 1, "limit": -1, "overQuotaWeight": -1}), TREE)
    assert decision.allowed and "overQuotaWeight: got -1" in decision.warnings[0]


def test_quota_validation_warns_about_children_above_their_parent() -> None:
    dept = queue("dept", gpu={"quota": 4, "limit": -1, "overQuotaWeight": 1})
    team = queue("team", "dept", gpu={"quota": 3, "limit": -1, "overQuotaWeight": 1})
    queues = cluster(dept, team)
    on = AdmissionSettings(quota_validation=True)
    decision = decide(queue("big", "dept", gpu={"quota": 5, "limit": -1, "overQuotaWeight": 1}), queues, on)
    assert decision.allowed
    assert decision.warnings == (
        "queue big: gpu quota 5 exceeds parent queue dept's gpu quota 4",
        "children of queue dept: gpu quotas add up to 8, above its gpu quota 4",
    )
    shrunk = queue("dept", gpu={"quota": 2, "limit": -1, "overQuotaWeight": 1})
    assert decide(shrunk, queues, on, operation="UPDATE").warnings == (
        "children of queue dept: gpu quotas add up to 3, above its gpu quota 2",
    )
    assert decide(queue("big", "dept", gpu={"quota": 5, "limit": -1}), queues).warnings == ()  # off by default
    assert decide(queue("any", "team"), cluster(queue("team")), on).warnings == ()  # -1 everywhere: unlimited


def test_a_parent_missing_from_the_cache_is_read_before_refusing() -> None:
    reads: list[str] = []

    def lookup(name: str) -> dict[str, Any] | None:
        reads.append(name)
        return queue("dept") if name == "dept" else None

    cache = QueueCache(lookup)
    known, _ = cache.view("dept")
    assert "dept" in known and reads == ["dept"]
    cache.view("dept")
    assert reads == ["dept"]  # cached since
    cache.on_change("Queue", {"metadata": {"name": "bad"}, "spec": {"resources": {"gpu": {"quota": -3}}}}, False)
    assert cache.view("")[1] == {"bad"}


def podgroup(spec: dict[str, Any]) -> dict[str, Any]:
    return {"kind": "PodGroup", "metadata": {"name": "pg", "namespace": "ns"}, "spec": spec}


TWO_LEVELS = [
    {"name": "workers", "minSubGroup": 1},
    {"name": "a", "parent": "workers", "minMember": 2},
    {"name": "b", "parent": "workers", "minMember": 2},
]


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ({"minMember": 2, "minSubGroup": 1, "subGroups": TWO_LEVELS}, "field spec.minSubGroup: set together with"),
        ({"subGroups": [{"name": "a"}]}, "field spec.subGroups[0].minMember: is required on a leaf sub-group"),
        ({"subGroups": [{"name": "a", "minMember": 1, "minSubGroup": 1}]}, "subGroups[0].minSubGroup: set together"),
        ({"subGroups": [{"name": "a", "minSubGroup": 1}]}, "subGroups[0].minSubGroup: is set on a leaf sub-group"),
        ({"subGroups": [{**TWO_LEVELS[0], "minSubGroup": -1}, *TWO_LEVELS[1:]]}, "got -1; allowed: 0 or more"),
        ({"subGroups": [{"name": "w", "minMember": 3}, {"name": "a", "parent": "w", "minMember": 1}]},
         "field spec.subGroups[0].minMember: sub-group 'w' has child sub-groups"),
        ({"subGroups": [{"name": "a", "parent": "b", "minMember": 1}, {"name": "b", "parent": "a"}]},
         "field spec.subGroups[0].parent: sub-group cycle a → b → a"),
        ({"subGroups": [{"name": "a", "parent": "x", "minMember": 1}]}, "parent 'x' is not a sub-group"),
        ({"subGroups": [{"name": "a", "minMember": 1}, {"name": "a", "minMember": 1}]}, "duplicate sub-group name"),
    ],
)  # fmt: skip
def test_bad_podgroups_are_refused(spec: dict[str, Any], message: str) -> None:
    decision = validate_podgroup(request("PodGroup", podgroup(spec)))
    assert not decision.allowed
    assert f"PodGroup ns/pg: {message}" in decision.message or message in decision.message


def test_podgroup_warnings_as_kai() -> None:
    assert validate_podgroup(request("PodGroup", podgroup({"minMember": 3}))).allowed
    no_gang = [{**TWO_LEVELS[0], "minSubGroup": 0}, *TWO_LEVELS[1:]]  # KAI #1989: 0 is no gang requirement
    for spec in ({"minMember": 0}, {"minSubGroup": 0, "subGroups": TWO_LEVELS}, {"subGroups": no_gang}):
        assert validate_podgroup(request("PodGroup", podgroup(spec))) == allow()
    assert validate_podgroup(request("PodGroup", podgroup({"minSubGroup": 1, "subGroups": TWO_LEVELS}))).allowed
    many = validate_podgroup(request("PodGroup", podgroup({"minSubGroup": 3, "subGroups": TWO_LEVELS})))
    assert many.allowed and "3 is more than the 1 direct child sub-groups" in many.warnings[0]
    mid = {"subGroups": [{"name": "w", "minMember": 3}, {"name": "a", "parent": "w", "minMember": 1}]}
    updated = validate_podgroup(request("PodGroup", podgroup(mid), "UPDATE", podgroup(mid)))
    assert updated.allowed and "sub-group 'w' has child sub-groups" in updated.warnings[0]


def topology(*levels: dict[str, str]) -> dict[str, Any]:
    return {"kind": "Topology", "metadata": {"name": "t"}, "spec": {"levels": list(levels)}}


@pytest.mark.parametrize(
    ("levels", "message"),
    [
        ((), "field spec.levels: has 0 levels; allowed: 1 to 16"),
        (({"nodeLabel": "rack"}, {"nodeLabel": "rack"}), "spec.levels[1].nodeLabel: rack repeats a level above"),
        (({"nodeLabel": "kubernetes.io/hostname"}, {"nodeLabel": "rack"}), "allowed only as the lowest level"),
        (({"nodeLabel": "zone", "alias": "z"}, {"nodeLabel": "rack", "alias": "z"}), "'z' names another level"),
        (({"nodeLabel": "zone", "alias": "rack"}, {"nodeLabel": "rack"}), "'rack' is a node label of a level"),
        (({"nodeLabel": ""},), "spec.levels[0].nodeLabel: is required"),
    ],
)
def test_bad_topologies_are_refused(levels: tuple[dict[str, str], ...], message: str) -> None:
    decision = validate_topology(request("Topology", topology(*levels)))
    assert not decision.allowed and message in decision.message
    assert "Topology t: field" in decision.message


def test_a_good_topology_passes() -> None:
    good = topology({"nodeLabel": "zone", "alias": "z"}, {"nodeLabel": "kubernetes.io/hostname"})
    assert validate_topology(request("Topology", good)).allowed

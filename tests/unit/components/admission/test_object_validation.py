"""The Queue, PodGroup and Topology webhooks' decisions, each refusal naming the field and what is allowed."""

from typing import Any

import pytest
from webhook_support import request

from kai.components.admission.podgroup_validation import validate_podgroup
from kai.components.admission.queue_validation import validate_queue
from kai.components.admission.queues import QueueCache
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


def test_a_queue_without_resources_is_refused_in_kais_words() -> None:
    decision = decide({"metadata": {"name": "q"}, "spec": {}}, TREE)
    assert not decision.allowed
    assert decision.message.startswith("resources must be specified (Queue q: field spec.resources: is required")
    assert decision.warnings == ("resources must be specified",)


UNUSABLE_QUEUES = [
    (queue("q", "dept", gpu={"quota": -5, "limit": -1}), "field spec.resources.gpu.quota: got -5; allowed: -1"),
    (queue("q", "dept", cpu={"quota": 4000, "limit": 2000}),
     "field spec.resources.cpu.limit: got 2000, below the quota 4000; allowed: -1 (unlimited) or at least"),
    (queue("q", "nowhere"), "field spec.parentQueue: parent queue 'nowhere' does not exist"),
    (queue("dept", "team"), "field spec.parentQueue: parent cycle dept → team → dept"),
]  # fmt: skip


@pytest.mark.parametrize(("raw", "message"), UNUSABLE_QUEUES)
def test_queues_kai_cannot_use_are_admitted_with_a_warning_as_kai_admits_them(
    raw: dict[str, Any], message: str
) -> None:
    decision = decide(raw, TREE)
    assert decision.allowed
    assert any(
        message in w and w.endswith("kai's scheduler will not use it until this is mended") for w in decision.warnings
    )


@pytest.mark.parametrize(("raw", "message"), UNUSABLE_QUEUES)
def test_strict_validation_refuses_queues_kai_cannot_use(raw: dict[str, Any], message: str) -> None:
    decision = decide(raw, TREE, AdmissionSettings(strict=True))
    assert not decision.allowed and message in decision.message


def test_quota_validation_refuses_a_child_whose_parent_does_not_exist_in_kais_words() -> None:
    decision = decide(queue("q", "nowhere"), TREE, AdmissionSettings(quota_validation=True))
    assert not decision.allowed
    assert decision.message.startswith(
        'failed to get parent queue nowhere: queues.scheduling.run.ai "nowhere" not found'
    )


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
    ("spec", "kai", "message"),
    [
        ({"minMember": 2, "minSubGroup": 1, "subGroups": TWO_LEVELS},
         "minMember and minSubGroup are mutually exclusive: set minMember (2) to schedule", "spec.minSubGroup: set"),
        ({"subGroups": [{"name": "a"}]}, "subgroup a: minMember is required",
         "field spec.subGroups[0].minMember: is required on a leaf sub-group"),
        ({"subGroups": [{"name": "a", "minMember": 1, "minSubGroup": 1}]},
         'subgroup "a": minMember and minSubGroup are mutually exclusive', "subGroups[0].minSubGroup: set together"),
        ({"subGroups": [{"name": "a", "minSubGroup": 1}]},
         'subgroup "a": minSubGroup cannot be set on a leaf SubGroup (no child SubGroups)',
         "subGroups[0].minSubGroup: is set on a leaf sub-group"),
        ({"subGroups": [{"name": "w", "minMember": 3}, {"name": "a", "parent": "w", "minMember": 1}]},
         'subgroup "w": minMember cannot be set on a mid-level SubGroup (has child SubGroups); use minSubGroup',
         "field spec.subGroups[0].minMember: sub-group 'w' has child sub-groups"),
        ({"subGroups": [{"name": "a", "parent": "b", "minMember": 1}, {"name": "b", "parent": "a"}]},
         "cycle detected in subgroups", "field spec.subGroups[0].parent: sub-group cycle a → b → a"),
        ({"subGroups": [{"name": "a", "parent": "x", "minMember": 1}]}, "parent x of a was not found",
         "parent 'x' is not a sub-group"),
        ({"subGroups": [{"name": "a", "minMember": 1}, {"name": "a", "minMember": 1}]}, "duplicate subgroup name a",
         "duplicate sub-group name"),
    ],
)  # fmt: skip
def test_podgroups_kai_refuses_are_refused_in_kais_words(spec: dict[str, Any], kai: str, message: str) -> None:
    decision = validate_podgroup(request("PodGroup", podgroup(spec)), OFF)
    assert not decision.allowed
    assert decision.message.startswith(kai)
    assert "(PodGroup ns/pg: field " in decision.message and message in decision.message


def test_podgroup_warnings_as_kai() -> None:
    assert validate_podgroup(request("PodGroup", podgroup({"minMember": 3})), OFF).allowed
    assert validate_podgroup(request("PodGroup", podgroup({"minSubGroup": 1, "subGroups": TWO_LEVELS})), OFF).allowed
    many = validate_podgroup(request("PodGroup", podgroup({"minSubGroup": 3, "subGroups": TWO_LEVELS})), OFF)
    assert many.allowed
    assert many.warnings == (
        "minSubGroup (3) exceeds the number of direct child SubGroups (1) "
        "(PodGroup ns/pg: field spec.minSubGroup: the gang can never start)",
    )
    mid = {"subGroups": [{"name": "w", "minMember": 3}, {"name": "a", "parent": "w", "minMember": 1}]}
    updated = validate_podgroup(request("PodGroup", podgroup(mid), "UPDATE", podgroup(mid)), OFF)
    assert updated.allowed and "sub-group 'w' has child sub-groups" in updated.warnings[0]


def test_a_mid_level_min_sub_group_of_0_is_a_fully_elastic_subtree_as_kai_allows() -> None:
    elastic = [{**TWO_LEVELS[0], "minSubGroup": 0}, *TWO_LEVELS[1:]]
    decision = validate_podgroup(request("PodGroup", podgroup({"minSubGroup": 1, "subGroups": elastic})), OFF)
    assert decision.allowed and decision.warnings == ()


def test_no_gang_requirement_at_the_podgroup_level_is_allowed_as_kais_main_allows_it() -> None:
    """KAI #1989: ``minMember: 0`` and a PodGroup-level ``minSubGroup: 0`` (v0.17 refused the latter)."""
    for spec in ({"minMember": 0}, {"minSubGroup": 0, "subGroups": TWO_LEVELS}):
        decision = validate_podgroup(request("PodGroup", podgroup(spec)), OFF)
        assert decision.allowed and decision.warnings == ()


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

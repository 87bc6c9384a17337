"""The hub's table of owner kinds is the one place a grouper kind is added: its rule, the kinds the pod-grouper reads,
its RBAC and the kinds ``kai simulate`` knows all come from it, and no second table of kinds is written by hand."""

from pathlib import Path

from registry_support import literal_tables, module_names, where

from kai.cluster.kube.resources import KINDS
from kai.components.operator.rbac import CLUSTER_RULES
from kai.components.podgrouper.rules.default import default_rule
from kai.components.podgrouper.rules.hub import GROUPED_KINDS, OWNERS, PORT_KINDS, QUALIFIED, rule_for
from kai.components.podgrouper.rules.model import Obj
from kai.components.sim.envelope import NAMESPACED
from kai.components.sim.workload_makers import API_GROUPS, MAKERS

NOT_RULES = {"model", "keys", "hub", "skip"}
"""Modules of rules/ that are not a family's rule: what rules read and return, label names, this table, and the
orchestrators' hand-over (``OwnerKind.skips``)."""
OWN_TABLES = {
    where("kai/components/sim/workload_makers.py", "KUBEFLOW_SPECS = {"),
    where("kai/components/sim/workload_makers.py", "MAKERS: dict["),
    where("kai/components/podgrouper/rules/ray.py", "CLUSTER_NAME_PATHS = {"),
}
"""Tables keyed by some of the kinds, holding what only they know: the simulator's pod makers (checked below), the
field a Kubeflow job keeps its replicas in, where a Ray workload names its RayCluster."""


def _top(api_version: str, kind: str) -> Obj:
    return Obj.parse({"apiVersion": api_version, "metadata": {"name": "w", "namespace": "ns", "uid": "u"}}, kind)


def test_every_rule_module_groups_a_kind_and_every_rule_is_a_rule_modules() -> None:
    used = {owner.rule.__module__.rsplit(".", 1)[1] for owner in OWNERS if owner.rule is not None}
    assert used == module_names(Path("kai/components/podgrouper/rules")) - NOT_RULES


def test_a_kind_is_grouped_by_its_rule_at_any_listed_version_and_others_by_the_default() -> None:
    for owner in OWNERS:
        if owner.rule is not None:
            version = "v9" if owner.version == "*" else owner.version
            assert rule_for(_top(f"{owner.group}/{version}".lstrip("/"), owner.kind)) is owner.rule
    assert rule_for(_top("example.com/v1", "Widget")) is default_rule
    assert rule_for(_top("kubeflow.org/v9", "PyTorchJob")) is default_rule


def test_the_pod_grouper_may_get_every_kind_it_reads() -> None:
    allowed = {
        (group, resource)
        for rule in CLUSTER_RULES["pod-grouper"]
        if "get" in rule["verbs"]
        for group in rule["apiGroups"]
        for resource in rule["resources"]
    }
    assert {(kind.group, kind.plural) for kind in PORT_KINDS.values()} <= allowed


def test_each_read_kind_has_one_port_name_and_only_a_clash_qualifies_it() -> None:
    read = {(o.group, o.kind, o.read_version) for o in OWNERS if o.read_version is not None}
    assert {(k.group, k.name, k.version) for k in PORT_KINDS.values()} == read
    assert QUALIFIED == {
        ("kubeflow.org/v2beta1", "MPIJob"): "MPIJob.v2beta1.kubeflow.org",
        ("serving.knative.dev/v1", "Service"): "Service.v1.serving.knative.dev",
    }
    assert {name for name, kind in PORT_KINDS.items() if name != kind.name} == set(QUALIFIED.values())
    assert all(KINDS.get(name, kind) == kind for name, kind in PORT_KINDS.items())  # none shadows one of kai's own


def test_the_simulator_makes_pods_only_for_known_kinds_and_holds_every_grouped_kind_in_a_namespace() -> None:
    assert set(MAKERS) <= GROUPED_KINDS
    assert {kind: next(o.group for o in OWNERS if o.kind == kind) for kind in MAKERS} == API_GROUPS
    assert GROUPED_KINDS <= NAMESPACED


def test_no_second_table_of_owner_kinds() -> None:
    found = literal_tables({owner.kind for owner in OWNERS}) - OWN_TABLES
    assert {place.rsplit(":", 1)[0] for place in found} == {"kai/components/podgrouper/rules/hub.py"}, found

"""The hub's table of owner kinds is the one place a grouper kind is added: its rule, the kinds the pod-grouper reads,
its RBAC and the kinds ``kai simulate`` knows all come from it, and no second table of kinds is written by hand."""

from pathlib import Path

from registry_support import literal_tables, module_names, where

from kai.cluster.kube.resources import kind_of
from kai.components.operator.rbac import CLUSTER_RULES
from kai.components.podgrouper.rules.default import default_rule
from kai.components.podgrouper.rules.hub import GROUPED_KINDS, OWNERS, READ_KINDS, port_kinds, rule_for
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
    assert {(kind.group, kind.plural) for kind in READ_KINDS} <= allowed


def test_an_owner_is_read_where_the_hub_says_under_a_name_the_kube_adapter_resolves() -> None:
    assert port_kinds("apps/v1", "Deployment") == ("Deployment",)  # one of kai's own kinds
    assert port_kinds("kubeflow.org/v2beta1", "MPIJob") == ("MPIJob.v2beta1.kubeflow.org", "MPIJob")
    assert port_kinds("ray.io/v1alpha1", "RayCluster") == ("RayCluster.v1.ray.io", "RayCluster")  # one CRD serves both
    assert port_kinds("serving.knative.dev/v1", "Service") == ("Service.v1.serving.knative.dev", "Service")
    assert port_kinds("example.com/v1", "Widget") == ("Widget",)  # not read: the kube adapter does not know it
    assert port_kinds("run.ai/v2", "TrainingWorkload") == ("TrainingWorkload",)
    for kind in READ_KINDS:
        names = port_kinds(kind.api_version, kind.name)
        assert kind_of(names[0]) == kind


def test_the_simulator_makes_pods_only_for_known_kinds_and_holds_every_grouped_kind_in_a_namespace() -> None:
    assert set(MAKERS) <= GROUPED_KINDS
    assert {kind: next(o.group for o in OWNERS if o.kind == kind) for kind in MAKERS} == API_GROUPS
    assert GROUPED_KINDS <= NAMESPACED


def test_no_second_table_of_owner_kinds() -> None:
    found = literal_tables({owner.kind for owner in OWNERS}) - OWN_TABLES
    assert {place.rsplit(":", 1)[0] for place in found} == {"kai/components/podgrouper/rules/hub.py"}, found

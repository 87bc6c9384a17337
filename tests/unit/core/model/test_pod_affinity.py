import pytest

from kai.core.model.errors import InvalidObject
from kai.core.model.pod_affinity import (
    AFFINITY_REASON,
    ANTI_AFFINITY_REASON,
    EXISTING_ANTI_AFFINITY_REASON,
    AffinityTerm,
    PlacedPod,
    PodAffinity,
    PodAffinityFilter,
    check_pod_affinity,
)

ZONE = "topology.kubernetes.io/zone"
HOST = "kubernetes.io/hostname"

NODES = {
    "n1": {ZONE: "a", HOST: "n1"},
    "n2": {ZONE: "a", HOST: "n2"},
    "n3": {ZONE: "b", HOST: "n3"},
    "n4": {HOST: "n4"},
}

REQUIRED = "requiredDuringSchedulingIgnoredDuringExecution"


def term(topology_key=ZONE, **extra):
    return {"topologyKey": topology_key, **extra}


def selects(**labels):
    return {"labelSelector": {"matchLabels": labels}}


def spec(affinity=(), anti=()):
    return {
        "affinity": {
            "podAffinity": {REQUIRED: list(affinity)},
            "podAntiAffinity": {REQUIRED: list(anti)},
        }
    }


def compile_(affinity=(), anti=(), namespace="default"):
    return PodAffinity.from_pod(namespace, spec(affinity, anti), f"Pod {namespace}/p")


def placed(node, namespace="default", affinity=None, **labels):
    return PlacedPod(namespace, labels, node, affinity or PodAffinity())


def feasible(labels, affinity, pods, namespace="default", namespaces_labels=None):
    """Reason per node for an incoming pod, through one prepared filter."""
    state = PodAffinityFilter.prepare(namespace, labels, affinity, NODES, pods, namespaces_labels)
    return {name: state.check(node_labels) for name, node_labels in NODES.items()}


# Parsing


def test_no_terms_is_empty():
    assert PodAffinity.from_pod("default", {}, "Pod default/p").is_empty
    assert compile_().is_empty
    assert not compile_(anti=[term(**selects(app="x"))]).is_empty


def test_term_defaults_to_own_namespace():
    [parsed] = compile_([term(**selects(app="x"))], namespace="team").affinity
    assert parsed.namespaces == frozenset({"team"})
    assert parsed.namespace_selector.selects_nothing
    assert parsed.topology_key == ZONE


def test_listed_namespaces_replace_own_namespace():
    [parsed] = compile_([term(namespaces=["x", "y"], **selects(app="web"))], namespace="team").affinity
    assert parsed.matches("x", {"app": "web"}, {})
    assert not parsed.matches("team", {"app": "web"}, {})


def test_empty_namespace_selector_covers_all_namespaces():
    [parsed] = compile_([term(namespaceSelector={}, **selects(app="web"))], namespace="team").affinity
    assert parsed.namespaces == frozenset()
    assert parsed.matches("anything", {"app": "web"}, {})
    assert not parsed.matches("anything", {"app": "db"}, {})


def test_namespace_selector_uses_namespace_labels_with_name_label_default():
    [parsed] = compile_(
        [term(namespaceSelector={"matchLabels": {"env": "prod"}}, **selects(app="web"))], namespace="team"
    ).affinity
    namespaces_labels = {"p1": {"env": "prod"}, "d1": {"env": "dev"}}
    assert parsed.matches("p1", {"app": "web"}, namespaces_labels)
    assert not parsed.matches("d1", {"app": "web"}, namespaces_labels)
    assert not parsed.matches("team", {"app": "web"}, namespaces_labels)
    [by_name] = compile_(
        [term(namespaceSelector={"matchLabels": {"kubernetes.io/metadata.name": "ml"}}, **selects(app="web"))]
    ).affinity
    assert by_name.matches("ml", {"app": "web"}, {})
    assert not by_name.matches("default", {"app": "web"}, {})


def test_nil_label_selector_selects_no_pod_but_empty_selects_all():
    [nil] = compile_([term()]).affinity
    assert not nil.matches("default", {}, {})
    assert not nil.matches("default", {"app": "x"}, {})
    [everything] = compile_([term(labelSelector={})]).affinity
    assert everything.matches("default", {"app": "x"}, {})
    assert not everything.matches("other", {"app": "x"}, {})


def test_equal_specs_compile_equal_regardless_of_term_order():
    a = compile_([term(**selects(app="a")), term(HOST, **selects(app="b"))], [term(**selects(x="1"))])
    b = compile_([term(HOST, **selects(app="b")), term(**selects(app="a"))], [term(**selects(x="1"))])
    assert a == b
    assert hash(a) == hash(b)
    assert a != compile_([term(**selects(app="a"))], [term(**selects(x="1"))])


@pytest.mark.parametrize(
    ("bad", "field", "problem"),
    [
        ({}, "topologyKey", "must be a non-empty node label key"),
        ({"topologyKey": 7}, "topologyKey", "expected a string, got int"),
        (term(namespaces="ns"), "namespaces", "expected a list, got str"),
        (
            term(labelSelector={"matchExpressions": [{"key": "a", "operator": "Gt", "values": ["1"]}]}),
            "labelSelector.matchExpressions[0].operator",
            "unknown operator 'Gt'; allowed: In, NotIn, Exists, DoesNotExist",
        ),
        (term(namespaceSelector=[]), "namespaceSelector", "expected a mapping with string keys, got list"),
    ],
)
def test_malformed_term_names_the_field(bad, field, problem):
    with pytest.raises(InvalidObject) as err:
        PodAffinity.from_pod("default", spec(anti=[term(**selects(a="b")), bad]), "Pod default/p1")
    assert str(err.value) == (f"Pod default/p1: field spec.affinity.podAntiAffinity.{REQUIRED}[1].{field}: {problem}")


def test_required_terms_must_be_a_list():
    with pytest.raises(InvalidObject) as err:
        PodAffinity.from_pod("default", {"affinity": {"podAffinity": {REQUIRED: term()}}}, "Pod default/p1")
    assert err.value.field == f"spec.affinity.podAffinity.{REQUIRED}"


def test_affinity_term_parse_direct():
    parsed = AffinityTerm.parse(term(HOST, **selects(app="x")), "ns", "Pod ns/p", "t")
    assert parsed.topology_key == HOST
    assert parsed.matches("ns", {"app": "x", "other": "y"}, {})


# Affinity


def test_affinity_needs_matching_pod_in_same_domain():
    affinity = compile_([term(**selects(app="db"))])
    reasons = feasible({"app": "web"}, affinity, [placed("n2", app="db")])
    assert reasons == {"n1": None, "n2": None, "n3": AFFINITY_REASON, "n4": AFFINITY_REASON}


def test_node_missing_topology_key_fails_affinity_even_for_first_pod():
    affinity = compile_([term(**selects(app="web"))])
    assert feasible({"app": "web"}, affinity, [])["n4"] == AFFINITY_REASON


def test_pod_must_match_all_terms_to_count():
    affinity = compile_([term(**selects(app="db")), term(HOST, **selects(tier="cache"))])
    only_app = feasible({}, affinity, [placed("n1", app="db")])
    assert set(only_app.values()) == {AFFINITY_REASON}
    both = feasible({}, affinity, [placed("n1", app="db", tier="cache")])
    assert both == {"n1": None, "n2": AFFINITY_REASON, "n3": AFFINITY_REASON, "n4": AFFINITY_REASON}


def test_pods_in_other_namespaces_do_not_count():
    affinity = compile_([term(**selects(app="db"))])
    reasons = feasible({}, affinity, [placed("n1", namespace="other", app="db")])
    assert reasons["n1"] == AFFINITY_REASON


def test_first_pod_of_a_group_may_go_anywhere_with_the_topology_label():
    affinity = compile_([term(**selects(app="web"))])
    reasons = feasible({"app": "web"}, affinity, [placed("n3", app="other")])
    assert reasons == {"n1": None, "n2": None, "n3": None, "n4": AFFINITY_REASON}


def test_first_pod_rule_needs_the_pod_to_match_its_own_terms():
    affinity = compile_([term(**selects(app="web"))])
    assert set(feasible({"app": "api"}, affinity, []).values()) == {AFFINITY_REASON}


def test_first_pod_rule_does_not_apply_once_a_matching_pod_exists():
    affinity = compile_([term(**selects(app="web"))])
    reasons = feasible({"app": "web"}, affinity, [placed("n3", app="web")])
    assert reasons == {"n1": AFFINITY_REASON, "n2": AFFINITY_REASON, "n3": None, "n4": AFFINITY_REASON}


def test_matching_pod_on_node_without_topology_label_still_counts_as_nothing():
    affinity = compile_([term(**selects(app="web"))])
    reasons = feasible({"app": "web"}, affinity, [placed("n4", app="web")])
    assert reasons == {"n1": None, "n2": None, "n3": None, "n4": AFFINITY_REASON}


# Anti-affinity


def test_anti_affinity_blocks_the_domain_of_a_matching_pod():
    affinity = compile_(anti=[term(**selects(app="web"))])
    reasons = feasible({"app": "web"}, affinity, [placed("n1", app="web")])
    assert reasons == {"n1": ANTI_AFFINITY_REASON, "n2": ANTI_AFFINITY_REASON, "n3": None, "n4": None}


def test_anti_affinity_per_host():
    affinity = compile_(anti=[term(HOST, **selects(app="web"))])
    reasons = feasible({"app": "web"}, affinity, [placed("n1", app="web"), placed("n3", app="db")])
    assert reasons == {"n1": ANTI_AFFINITY_REASON, "n2": None, "n3": None, "n4": None}


def test_anti_affinity_ignores_non_matching_pods():
    affinity = compile_(anti=[term(**selects(app="web"))])
    assert set(feasible({}, affinity, [placed("n1", app="db")]).values()) == {None}


# Symmetry: existing pods' anti-affinity


def test_existing_anti_affinity_repels_a_pod_without_any_terms():
    guard = compile_(anti=[term(**selects(app="web"))])
    reasons = feasible({"app": "web"}, PodAffinity(), [placed("n3", affinity=guard, app="db")])
    assert reasons == {"n1": None, "n2": None, "n3": EXISTING_ANTI_AFFINITY_REASON, "n4": None}


def test_existing_anti_affinity_only_when_incoming_pod_matches():
    guard = compile_(anti=[term(**selects(app="web"))])
    assert set(feasible({"app": "api"}, PodAffinity(), [placed("n3", affinity=guard)]).values()) == {None}


def test_existing_anti_affinity_respects_term_namespace():
    guard = compile_(anti=[term(**selects(app="web"))], namespace="other")
    reasons = feasible({"app": "web"}, PodAffinity(), [placed("n3", namespace="other", affinity=guard)])
    assert set(reasons.values()) == {None}
    reasons = feasible(
        {"app": "web"}, PodAffinity(), [placed("n3", namespace="other", affinity=guard)], namespace="other"
    )
    assert reasons["n3"] == EXISTING_ANTI_AFFINITY_REASON


def test_existing_anti_affinity_on_node_without_its_key_blocks_nothing():
    guard = compile_(anti=[term(**selects(app="web"))])
    assert set(feasible({"app": "web"}, PodAffinity(), [placed("n4", affinity=guard)]).values()) == {None}


def test_existing_anti_affinity_uses_namespace_labels_of_incoming_pod():
    guard = compile_(
        anti=[term(namespaceSelector={"matchLabels": {"env": "prod"}}, **selects(app="web"))], namespace="ops"
    )
    pods = [placed("n1", namespace="ops", affinity=guard)]
    prod = feasible({"app": "web"}, PodAffinity(), pods, namespace="p", namespaces_labels={"p": {"env": "prod"}})
    assert prod["n1"] == EXISTING_ANTI_AFFINITY_REASON
    dev = feasible({"app": "web"}, PodAffinity(), pods, namespace="d", namespaces_labels={"d": {"env": "dev"}})
    assert dev["n1"] is None


# Reason order, incremental updates, one-shot helper


def test_reasons_follow_upstream_order():
    guard = compile_(anti=[term(**selects(app="web"))])
    affinity = compile_([term(**selects(app="db"))], [term(**selects(app="web"))])
    pods = [placed("n1", app="db"), placed("n2", app="web", affinity=guard), placed("n3", affinity=guard)]
    reasons = feasible({"app": "web"}, affinity, pods)
    assert reasons["n1"] == ANTI_AFFINITY_REASON
    assert reasons["n3"] == AFFINITY_REASON
    only_guard = feasible({"app": "web"}, PodAffinity(), pods)
    assert only_guard == {
        "n1": EXISTING_ANTI_AFFINITY_REASON,
        "n2": EXISTING_ANTI_AFFINITY_REASON,
        "n3": EXISTING_ANTI_AFFINITY_REASON,
        "n4": None,
    }


def test_add_and_remove_track_placements():
    affinity = compile_(anti=[term(HOST, **selects(app="web"))])
    state = PodAffinityFilter("default", {"app": "web"}, affinity)
    assert state.passes_all_nodes
    peer = placed("n1", app="web")
    state.add(peer, NODES["n1"])
    assert not state.passes_all_nodes
    assert state.check(NODES["n1"]) == ANTI_AFFINITY_REASON
    state.add(peer, NODES["n1"])
    state.remove(peer, NODES["n1"])
    assert state.check(NODES["n1"]) == ANTI_AFFINITY_REASON
    state.remove(peer, NODES["n1"])
    assert state.check(NODES["n1"]) is None
    assert state.passes_all_nodes


def test_removing_the_last_match_restores_the_first_pod_rule():
    affinity = compile_([term(**selects(app="web"))])
    peer = placed("n3", app="web")
    state = PodAffinityFilter.prepare("default", {"app": "web"}, affinity, NODES, [peer])
    assert state.check(NODES["n1"]) == AFFINITY_REASON
    state.remove(peer, NODES["n3"])
    assert state.check(NODES["n1"]) is None


def test_pod_with_affinity_never_passes_all_nodes():
    assert not PodAffinityFilter("default", {}, compile_([term(labelSelector={})])).passes_all_nodes


def test_pods_on_unknown_nodes_are_ignored():
    affinity = compile_(anti=[term(**selects(app="web"))])
    assert set(feasible({"app": "web"}, affinity, [placed("gone", app="web")]).values()) == {None}


def test_check_pod_affinity_one_shot():
    affinity = compile_(anti=[term(**selects(app="web"))])
    pods = [placed("n1", app="web")]
    assert check_pod_affinity("default", {}, affinity, NODES["n2"], NODES, pods) == ANTI_AFFINITY_REASON
    assert check_pod_affinity("default", {}, affinity, NODES["n3"], NODES, pods) is None
    assert check_pod_affinity("default", {}, PodAffinity(), NODES["n1"], NODES, pods) is None


def test_reason_strings_mirror_upstream():
    assert AFFINITY_REASON == "node(s) didn't match pod affinity rules"
    assert ANTI_AFFINITY_REASON == "node(s) didn't match pod anti-affinity rules"
    assert EXISTING_ANTI_AFFINITY_REASON == "node(s) didn't satisfy existing pods anti-affinity rules"


def test_preferred_terms_keep_their_weights_in_order_and_count_as_terms() -> None:
    preferred = "preferredDuringSchedulingIgnoredDuringExecution"
    parsed = PodAffinity.from_pod(
        "ns",
        {
            "affinity": {
                "podAntiAffinity": {
                    preferred: [
                        {"weight": 10, "podAffinityTerm": term(**selects(app="a"))},
                        {"weight": 3, "podAffinityTerm": term(HOST, **selects(app="b"))},
                    ]
                }
            }
        },
        "pod ns/p",
    )
    assert [(weight, t.topology_key) for weight, t in parsed.preferred_anti_affinity] == [(10, ZONE), (3, HOST)]
    assert parsed.is_empty and parsed.has_terms


@pytest.mark.parametrize("weight", [0, 101, "5", None])
def test_a_preferred_term_weight_outside_1_to_100_names_the_field(weight: object) -> None:
    spec = {"affinity": {"podAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [{"weight": weight}]}}}
    with pytest.raises(InvalidObject) as refused:
        PodAffinity.from_pod("ns", spec, "pod ns/p")
    assert refused.value.field == "spec.affinity.podAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].weight"

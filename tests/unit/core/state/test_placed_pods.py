"""The placed-pod index: a term's candidates come from its narrowest label requirement (a superset of what it
selects), and follow the node table through a statement's moves."""

from core_builders import T0, node, pod, podgroup
from plugin_support import bare_session, labelled, task

from kai.core.framework.statement import Statement
from kai.core.model.pod_affinity import AffinityTerm
from kai.core.state.placed_pods import PlacedPods


def _pods(*placed: tuple[str, str, dict[str, str]]) -> list[tuple[str, dict]]:
    objects: list[tuple[str, dict]] = [("Node", node("n1", 1)), ("Node", node("n2", 1))]
    for name, where, labels in placed:
        objects += [("PodGroup", podgroup(name, "q", T0)), ("Pod", labelled(pod(name, name, 0, where), labels))]
    return objects


def _term(selector: dict) -> AffinityTerm:
    return AffinityTerm.parse({"labelSelector": selector, "topologyKey": "k"}, "default", "pod", "term")


def _counts(index: PlacedPods, term: AffinityTerm) -> list[float] | None:
    counted = index.selected_per_node(term)
    return None if counted is None else list(counted)


def _names(found) -> set[tuple[str, str]]:
    return {(t.name, info.name) for t, info in found}


def test_candidates_come_from_the_narrowest_in_or_exists_requirement() -> None:
    ssn = bare_session(
        *_pods(("a", "n1", {"app": "db", "tier": "x"}), ("b", "n2", {"app": "db"}), ("c", "n2", {"tier": "x"}))
    )
    index = PlacedPods(ssn.nodes)
    both = _term({"matchLabels": {"app": "db"}, "matchExpressions": [{"key": "tier", "operator": "Exists"}]})
    assert _names(index.selectable(both)) in ({("a", "n1"), ("b", "n2")}, {("a", "n1"), ("c", "n2")})
    assert _names(index.selectable(_term({"matchLabels": {"app": "web"}}))) == set()
    not_in = _term({"matchExpressions": [{"key": "app", "operator": "NotIn", "values": ["db"]}]})
    assert _names(index.selectable(not_in)) == {("a", "n1"), ("b", "n2"), ("c", "n2")}
    assert _names(index.selectable(AffinityTerm.parse({"topologyKey": "k"}, "default", "pod", "term"))) == set()


def test_the_index_follows_a_statements_placements_and_discard() -> None:
    ssn = bare_session(*_pods(("a", "n1", {"app": "db"}), ("b", "", {"app": "db"})))
    index = PlacedPods(ssn.nodes)
    db = _term({"matchLabels": {"app": "db"}})
    assert _names(index.selectable(db)) == {("a", "n1")}
    statement = Statement(ssn)
    statement.allocate(task(ssn, "b"), "n2")
    statement.evict(task(ssn, "a"), "test")
    assert _names(index.selectable(db)) == {("a", "n1"), ("b", "n2")}  # a releasing pod is still on its node
    assert _counts(index, db) == [1.0, 1.0]
    statement.discard()
    assert _names(index.selectable(db)) == {("a", "n1")}
    assert _counts(index, db) == [1.0, 0.0]


def test_a_one_label_term_counts_its_pods_per_node_and_pods_with_terms_are_grouped_by_them() -> None:
    avoid = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [_spec_term({"app": "db"})]}}
    objects = _pods(("a", "n1", {"app": "db"}), ("b", "n1", {"app": "db"}), ("c", "n2", {"app": "db"}))
    for name in ("d", "e"):
        made = pod(name, name, 0, "n2")
        made["spec"]["affinity"] = avoid
        objects += [("PodGroup", podgroup(name, "q", T0)), ("Pod", made)]
    ssn = bare_session(*objects)
    index = PlacedPods(ssn.nodes)
    assert _counts(index, _term({"matchLabels": {"app": "db"}})) == [2.0, 1.0]
    other_namespace = AffinityTerm.parse(
        {"labelSelector": {"matchLabels": {"app": "db"}}, "topologyKey": "k"}, "team", "pod", "term"
    )
    assert _counts(index, other_namespace) == [0.0, 0.0]
    two_labels = _term({"matchLabels": {"app": "db", "tier": "x"}})
    assert index.selected_per_node(two_labels) is None  # counted pod by pod (``selectable``)
    [(terms, per_node)] = index.with_terms()
    assert terms == task(ssn, "d").pod.pod_affinity
    assert list(per_node) == [0.0, 2.0]


def _spec_term(labels: dict[str, str]) -> dict:
    return {"labelSelector": {"matchLabels": labels}, "topologyKey": "kubernetes.io/hostname"}

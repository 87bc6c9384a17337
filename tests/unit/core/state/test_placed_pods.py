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
    statement.discard()
    assert _names(index.selectable(db)) == {("a", "n1")}

"""podaffinity: preferred inter-pod (anti-)affinity scored as KAI scores it (upstream InterPodAffinity's raw score
times the k8s-plugins tier), which outweighs every lower tier: a CPU-only pod that prefers to avoid the pod on the
CPU node goes to a GPU node, though resourcetype prefers the CPU node."""

from typing import Any

import numpy as np
from core_builders import T0, node, pod, podgroup
from plugin_support import bare_session, labelled, task

from kai.core.framework.scores import K8S_PLUGINS, RESOURCE_TYPE
from kai.core.framework.session import Session
from kai.core.framework.statement import Statement
from kai.core.plugins.podaffinity import PodAffinityPlugin
from kai.core.plugins.resourcetype import ResourceTypePlugin

HOST = "kubernetes.io/hostname"
ZONE = "topology.kubernetes.io/zone"


def _node(name: str, gpus: int, zone: str) -> tuple[str, dict[str, Any]]:
    return ("Node", labelled(node(name, gpus), {HOST: name, ZONE: zone}))


NODES = (_node("cpu-1", 0, "a"), _node("gpu-1", 8, "a"), _node("gpu-2", 8, "b"))


def _term(key: str = HOST, **labels: str) -> dict[str, Any]:
    return {"labelSelector": {"matchLabels": labels}, "topologyKey": key}


def _pod(
    name: str, node_name: str = "", labels: dict[str, str] | None = None, **affinity: Any
) -> list[tuple[str, Any]]:
    made = pod(name, name, gpus=0, node_name=node_name)
    if labels:
        labelled(made, labels)
    if affinity:
        made["spec"]["affinity"] = affinity
    return [("PodGroup", podgroup(name, "q", T0)), ("Pod", made)]


def _preferred(weight: int, term: dict[str, Any]) -> dict[str, Any]:
    return {"preferredDuringSchedulingIgnoredDuringExecution": [{"weight": weight, "podAffinityTerm": term}]}


def _opened(*objects: tuple[str, Any], plugins: tuple[Any, ...] = ()) -> Session:
    ssn = bare_session(*NODES, *objects)
    for plugin in (PodAffinityPlugin(), *plugins):
        plugin.on_session_open(ssn)
    return ssn


def _scores(ssn: Session, name: str) -> list[float]:
    every = np.ones(len(ssn.nodes), dtype=bool)
    return [float(s) for s in ssn.node_scores(task(ssn, name), every)]


def test_a_cpu_pod_avoiding_the_pod_on_the_cpu_node_goes_to_a_gpu_node_despite_resourcetype() -> None:
    ssn = _opened(
        *_pod("running", "cpu-1", {"hello": "world"}),
        *_pod("new", podAntiAffinity=_preferred(10, _term(hello="world"))),
        plugins=(ResourceTypePlugin(),),
    )
    scores = _scores(ssn, "new")
    assert scores == [RESOURCE_TYPE - 10 * K8S_PLUGINS, 0.0, 0.0]
    assert ssn.nodes.infos[int(np.argmax(scores))].name == "gpu-1"


def test_preferred_affinity_scores_every_node_of_the_matching_pods_domain_by_weight_per_pod() -> None:
    ssn = _opened(
        *_pod("a", "gpu-1", {"app": "db"}),
        *_pod("b", "cpu-1", {"app": "db"}),
        *_pod("other", "gpu-2", {"app": "web"}),
        *_pod("new", podAffinity=_preferred(5, _term(ZONE, app="db"))),
    )
    assert _scores(ssn, "new") == [10 * K8S_PLUGINS, 10 * K8S_PLUGINS, 0.0]


def test_a_term_without_namespaces_selects_pods_of_its_own_namespace_only() -> None:
    elsewhere = _pod("a", "gpu-1", {"app": "db"})
    elsewhere[1][1]["metadata"]["namespace"] = "other"
    ssn = _opened(*elsewhere, *_pod("new", podAffinity=_preferred(5, _term(app="db"))))
    assert _scores(ssn, "new") == [0.0, 0.0, 0.0]


def test_placed_pods_terms_that_select_the_incoming_pod_score_it_too() -> None:
    ssn = _opened(
        *_pod("shy", "gpu-1", podAntiAffinity=_preferred(7, _term(role="new"))),
        *_pod("fond", "gpu-2", podAffinity={"requiredDuringSchedulingIgnoredDuringExecution": [_term(role="new")]}),
        *_pod("new", labels={"role": "new"}),
    )
    # the required affinity of a placed pod counts hardPodAffinityWeight (1)
    assert _scores(ssn, "new") == [0.0, -7 * K8S_PLUGINS, 1 * K8S_PLUGINS]


def test_the_score_follows_the_sessions_placements_and_their_rollback() -> None:
    ssn = _opened(
        *_pod("db", labels={"app": "db"}),
        *_pod("new", podAntiAffinity=_preferred(3, _term(app="db"))),
    )
    assert _scores(ssn, "new") == [0.0, 0.0, 0.0]
    statement = Statement(ssn)
    statement.allocate(task(ssn, "db"), "gpu-2")
    assert _scores(ssn, "new") == [0.0, 0.0, -3 * K8S_PLUGINS]
    statement.discard()
    assert _scores(ssn, "new") == [0.0, 0.0, 0.0]


def test_a_pod_without_terms_beside_pods_without_terms_scores_nothing() -> None:
    ssn = _opened(*_pod("a", "gpu-1", {"app": "db"}), *_pod("new"))
    assert _scores(ssn, "new") == [0.0, 0.0, 0.0]


def test_a_placed_pod_being_scored_again_is_not_counted_against_itself() -> None:
    spread = {"podAntiAffinity": _preferred(4, _term(app="web"))}
    ssn = _opened(*_pod("web-0", labels={"app": "web"}, **spread))
    Statement(ssn).allocate(task(ssn, "web-0"), "gpu-1")
    assert _scores(ssn, "web-0") == [0.0, 0.0, 0.0]

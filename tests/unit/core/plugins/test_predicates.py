"""predicates: which nodes can never take a pod this cycle (not ready, node affinity, taints: one text each, as KAI's),
which cannot now (host ports in use), and a pod larger than every node or missing a ConfigMap, refused before any
node is tried."""

from core_builders import T0, node, pod, podgroup
from plugin_support import opened, task

from kai.core.framework.fit_reasons import refused_everywhere
from kai.core.plugins.predicates import NODE_AFFINITY, NOT_READY, PORTS_REASON, PredicatesPlugin
from kai.core.state.reason_text import describe, describe_fix


def _nodes() -> list[tuple[str, dict]]:
    a100 = node("n1-a100", 8)
    a100["metadata"]["labels"]["accelerator"] = "a100"
    tainted = node("n2-tainted", 8)
    tainted["spec"] = {"taints": [{"key": "dedicated", "value": "infra", "effect": "NoSchedule"}]}
    down = node("n3-down", 8)
    down["status"]["conditions"] = [{"type": "Ready", "status": "False"}]
    return [("Node", a100), ("Node", tainted), ("Node", down), ("Node", node("n4-plain", 8))]


def _with_spec(obj: dict, **spec: object) -> dict:
    obj["spec"].update(spec)
    return obj


def test_the_static_mask_keeps_the_ready_matching_untainted_nodes_with_a_reason_per_node() -> None:
    ssn = opened(
        PredicatesPlugin(),
        *_nodes(),
        ("PodGroup", podgroup("job", "q", T0)),
        ("Pod", _with_spec(pod("picky-0", "job"), nodeSelector={"accelerator": "a100"})),
        ("Pod", pod("plain-0", "job")),
    )
    (mask,) = ssn.node_filters
    picky = mask(task(ssn, "picky-0"), ssn.jobs["default/job"])
    plain = mask(task(ssn, "plain-0"), ssn.jobs["default/job"])
    assert picky is not None and plain is not None
    assert list(picky.allowed) == [True, False, False, False]
    assert list(plain.allowed) == [True, False, False, True]
    reasons = {text: [ssn.nodes.infos[c].name for c in range(len(ssn.nodes)) if m[c]] for text, m in plain.by_reason}
    assert reasons[NOT_READY] == ["n3-down"]
    assert [nodes for text, nodes in reasons.items() if "untolerated taint" in text] == [["n2-tainted"]]
    assert dict(picky.by_reason).keys() >= {NODE_AFFINITY}


def test_a_host_port_in_use_on_a_node_refuses_it() -> None:
    port = {"name": "c", "ports": [{"containerPort": 80, "hostPort": 8080}]}
    used = _with_spec(pod("web-0", "web", node_name="n4-plain"), containers=[port])
    wanted = _with_spec(pod("web-1", "web"), containers=[port])
    ssn = opened(PredicatesPlugin(), *_nodes(), ("PodGroup", podgroup("web", "q", T0)), ("Pod", used), ("Pod", wanted))
    host_ports = ssn.predicates[1]
    job = ssn.jobs["default/web"]
    assert host_ports(task(ssn, "web-1"), job, ssn.nodes.by_name["n4-plain"]) == PORTS_REASON
    assert host_ports(task(ssn, "web-1"), job, ssn.nodes.by_name["n1-a100"]) is None


def test_a_pod_larger_than_every_node_is_refused_before_any_node() -> None:
    ssn = opened(
        PredicatesPlugin(),
        *_nodes(),
        ("PodGroup", podgroup("huge", "q", T0)),
        ("Pod", pod("huge-0", "huge", gpus=16)),
        ("Pod", pod("small-0", "huge", gpus=1)),
    )
    too_large, _config_maps = ssn.pre_predicates
    job = ssn.jobs["default/huge"]
    refused = too_large(task(ssn, "huge-0"), job)
    assert refused is not None
    assert "MaxNodePoolResources: The pod default/huge-0 requires GPU: 16" in refused
    assert "Max GPU resources available in a single node in the default node-pool is topped at 8" in refused
    assert too_large(task(ssn, "small-0"), job) is None


def _mounting(name: str, *config_maps: str) -> dict:
    made = pod(name, "web", gpus=0)
    made["spec"]["volumes"] = [{"name": f"v{i}", "configMap": {"name": cm}} for i, cm in enumerate(config_maps)]
    made["spec"]["containers"][0]["volumeMounts"] = [{"name": f"v{i}"} for i in range(len(config_maps))]
    return made


def test_a_pod_whose_config_map_does_not_exist_is_refused_with_kais_text_then_kais_explanation() -> None:
    settings = {"metadata": {"name": "settings", "namespace": "default"}}
    ssn = opened(
        PredicatesPlugin(),
        *_nodes(),
        ("ConfigMap", settings),
        ("PodGroup", podgroup("web", "q", T0)),
        ("Pod", _mounting("web-0", "settings", "missing-b", "missing-a")),
        ("Pod", _mounting("web-1", "settings")),
    )
    _too_large, config_maps = ssn.pre_predicates
    job = ssn.jobs["default/web"]
    refused = config_maps(task(ssn, "web-0"), job)
    assert refused is not None
    assert refused == (
        "Scheduling conditions were not met for pod default/web-0:\n"
        "ConfigMap: Missing required configmaps: [missing-a missing-b]. (ConfigMap missing-a, missing-b does not "
        "exist in namespace default: create it, or mark the pod's reference optional)\n"
    )
    assert config_maps(task(ssn, "web-1"), job) is None
    _too_large_anywhere, invariant = ssn.victim_invariant_fns
    assert invariant(task(ssn, "web-0")) == "Missing required configmaps: [missing-a missing-b]"
    reason = refused_everywhere(refused, "default/web-0")
    assert describe(reason) == (
        "pod default/web-0 needs ConfigMap missing-a, missing-b, which does not exist in namespace default"
    )
    assert reason.fix is not None
    assert describe_fix(reason.fix) == "create ConfigMap missing-a, missing-b in namespace default"

"""The ConfigMap pre-predicate's texts: KAI's failure (what its victim-invariant check reports) and the condition,
KAI's words first and kai's explanation after them."""

from core_builders import T0, pod, podgroup
from plugin_support import bare_session, task

from kai.core.framework import config_map_predicate
from kai.core.state.reasons import FixKind, Predicate


def test_only_the_missing_config_maps_of_the_pods_namespace_are_named() -> None:
    reading = pod("web-0", "web", gpus=0)
    reading["spec"]["containers"][0]["envFrom"] = [{"configMapRef": {"name": "a"}}, {"configMapRef": {"name": "b"}}]
    ssn = bare_session(("PodGroup", podgroup("web", "q", T0)), ("Pod", reading))
    web = task(ssn, "web-0")
    failure = config_map_predicate.missing(web, {"default/a": object(), "other/b": object()})
    assert failure == "Missing required configmaps: [b]"
    assert failure is not None and failure.predicate is Predicate.CONFIG_MAP
    assert failure.evidence == {"namespace": "default", "configMaps": ["b"], "fix": FixKind.CREATE_CONFIG_MAP}
    condition = config_map_predicate.condition(web, {"default/a": object()})
    assert condition is not None
    assert condition.startswith("Scheduling conditions were not met for pod default/web-0:\nConfigMap: Missing")
    assert config_map_predicate.missing(web, {"default/a": object(), "default/b": object()}) is None

"""KAI's ConfigMap pre-predicate: a pod that mounts or reads a ConfigMap that does not exist stays Unschedulable until
it does, whatever is evicted (a victim-invariant pre-predicate, like MaxNodePoolResources).

KAI's texts come first, byte for byte; the pod's condition adds kai's explanation after them in parentheses.
"""

from collections.abc import Mapping

from kai.core.state.reasons import FixKind, Predicate, Refusal
from kai.core.state.task import TaskInfo

PREDICATE = "ConfigMap"


def missing(task: TaskInfo, config_maps: Mapping[str, object]) -> Refusal | None:
    """KAI's failure text (``Missing required configmaps: [a b]``) for the pod's ConfigMaps that do not exist."""
    namespace = task.namespace
    absent = [name for name in task.pod.config_maps if f"{namespace}/{name}" not in config_maps]
    if not absent:
        return None
    evidence = {"namespace": namespace, "configMaps": absent, "fix": FixKind.CREATE_CONFIG_MAP}
    return Refusal(f"Missing required configmaps: [{' '.join(absent)}]", Predicate.CONFIG_MAP, evidence)


def condition(task: TaskInfo, config_maps: Mapping[str, object]) -> Refusal | None:
    """The pre-predicate failure as allocate reports it for the pod, kai's explanation after KAI's text."""
    failure = missing(task, config_maps)
    if failure is None:
        return None
    absent = ", ".join(failure.evidence["configMaps"])
    text = f"Scheduling conditions were not met for pod {task.namespace}/{task.name}:\n{PREDICATE}: {failure}."
    explained = (
        f"ConfigMap {absent} does not exist in namespace {task.namespace}: create it, or mark the pod's reference "
        "optional"
    )
    return Refusal(f"{text} ({explained})\n", Predicate.CONFIG_MAP, failure.evidence)

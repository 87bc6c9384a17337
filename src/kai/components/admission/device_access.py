"""KAI's device-access rules (``--block-nvidia-visible-devices``, the Config's ``admission.blockNvidiaVisibleDevices``;
KAI's ``deviceaccess`` admission plugin), off by default: a container may not choose its GPUs itself through
``NVIDIA_VISIBLE_DEVICES``, which would bypass the device plugin's assignment.

- mutation: a container that requests no GPU (``nvidia.com/gpu`` or a MIG profile) gets
  ``NVIDIA_VISIBLE_DEVICES=void``, so it sees no GPU of its node;
- validation: a container that sets ``NVIDIA_VISIBLE_DEVICES`` to anything but ``void`` or ``none``, or from a
  reference, is refused, in KAI's words.

The container that receives a shared GPU is exempt from both: its ``NVIDIA_VISIBLE_DEVICES`` comes from the
GPU-sharing ConfigMap kai's binder fills.
"""

from collections.abc import Iterator, Mapping
from typing import Any

from kai.components.shared.pod_gpu import ContainerRef, annotations_of, containers, fraction_container
from kai.components.shared.pod_gpu import sharing_annotation as sharing
from kai.core.model import names
from kai.core.model.errors import InvalidObject
from kai.core.model.quantity import parse_quantity

VISIBLE_DEVICES = "NVIDIA_VISIBLE_DEVICES"
ALLOWED = ("void", "none")


def _guarded(pod: Mapping[str, Any], obj: str) -> Iterator[tuple[ContainerRef, dict[str, Any]]]:
    """Every container but the one receiving a shared GPU."""
    exempt = None
    if sharing(annotations_of(pod)):
        try:
            exempt = fraction_container(pod, obj)
        except InvalidObject:
            exempt = None  # the GPU-sharing rules refuse the pod, naming the annotation
    for ref, container in containers(pod.get("spec") or {}):
        if ref != exempt:
            yield ref, container


def _requests_gpu(container: Mapping[str, Any], obj: str) -> bool:
    requests = (container.get("resources") or {}).get("requests") or {}
    for name, amount in requests.items() if isinstance(requests, Mapping) else ():
        if name == names.GPU or str(name).startswith(names.MIG_PREFIX):
            try:
                if parse_quantity(amount, obj, f"resources.requests.{name}"):
                    return True
            except InvalidObject:
                return True  # unreadable: the validating webhook reports it; its access is not taken away
    return False


def block_gpu_access(pod: dict[str, Any], obj: str) -> None:
    """Sets ``NVIDIA_VISIBLE_DEVICES=void`` on each guarded container that requests no GPU (in place)."""
    for _, container in _guarded(pod, obj):
        if _requests_gpu(container, obj):
            continue
        env = [
            e for e in container.get("env") or [] if not (isinstance(e, Mapping) and e.get("name") == VISIBLE_DEVICES)
        ]
        container["env"] = [*env, {"name": VISIBLE_DEVICES, "value": "void"}]


def device_access_problems(pod: Mapping[str, Any], obj: str) -> list[InvalidObject]:
    """KAI's refusal of a guarded container's own ``NVIDIA_VISIBLE_DEVICES``, the first one (as KAI stops there)."""
    for ref, container in _guarded(pod, obj):
        for index, env in enumerate(container.get("env") or []):
            if not isinstance(env, Mapping) or env.get("name") != VISIBLE_DEVICES:
                continue
            name, value, field = container.get("name", ref.path), env.get("value") or "", f"{ref.path}.env[{index}]"
            if value and value not in ALLOWED:
                kai = (
                    f"container {name} has an environment variable {VISIBLE_DEVICES} defined with a value of {value}."
                    " This is forbidden due to conflicts with Nvidia's device plugin. The only values that are "
                    "allowed are 'void' or 'none'"
                )
                problem = f"{VISIBLE_DEVICES}={value} picks GPUs past the device plugin; allowed: void, none, or unset"
                return [InvalidObject(obj, field, problem, kai=kai)]
            if not value and env.get("valueFrom") is not None:
                kai = (
                    f"container {name} has an environment variable {VISIBLE_DEVICES} defined with a valueFrom "
                    "reference. This is forbidden due to possible conflicts with Nvidia's device plugin"
                )
                problem = (
                    f"{VISIBLE_DEVICES} from a reference may pick GPUs past the device plugin; allowed: void, none"
                )
                return [InvalidObject(obj, field, problem, kai=kai)]
    return []

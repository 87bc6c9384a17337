"""What one pod adds to its PodGroup's ``status.resourcesStatus`` (KAI's podgroup-controller,
docs/kai-reference.md §1.5): its requests while it is Pending or Running, and what it holds once bound.

A pod's usage is read once per version of the pod. The one outside input is the GPU memory of the node of a
``gpu-memory`` pod placed as a fraction (its GPUs are its memory over the node's): that is kept apart
(``shared_mib``), so that a change of the node's label changes the pod's GPUs without reading the pod again.
"""

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from kai.components.controllers.totals import Amount, Frozen, exact, freeze
from kai.core.model import names
from kai.core.model.errors import InvalidObject
from kai.core.model.objects import parse_pod
from kai.core.model.resources import GpuRequestKind

GPU_MEMORY_RESOURCE = "run.ai/gpu.memory"
COUNTED_PHASES = ("Pending", "Running")


@dataclass(frozen=True, slots=True)
class PodUsage:
    podgroup: str
    """The PodGroup's key (namespace/name) the pod names."""
    requested: Frozen
    allocated: Frozen | None
    """None while the pod is not bound."""
    node: str = ""
    shared_mib: int = 0
    """A bound ``gpu-memory`` pod received as a fraction: its GPU memory (devices × MiB); it holds that over
    ``node``'s GPU memory (its ``nvidia.com/gpu.memory`` label) in GPUs besides ``allocated``."""


def counted_podgroup(pod: Mapping[str, Any]) -> str:
    """The key of the PodGroup a pod counts towards ("" when it counts towards none: it names no PodGroup, or it is
    neither Pending nor Running)."""
    meta = pod.get("metadata")
    annotations = meta.get("annotations") if isinstance(meta, Mapping) else None
    group = annotations.get(names.POD_GROUP_ANNOTATION) if isinstance(annotations, Mapping) else None
    status = pod.get("status") or {}
    phase = status.get("phase", "Pending") if isinstance(status, Mapping) else None
    if not group or phase not in COUNTED_PHASES:
        return ""
    return f"{meta.get('namespace') if isinstance(meta, Mapping) else None}/{group}"


def pod_usage(pod: Mapping[str, Any], podgroup: str) -> PodUsage:
    """The usage of a pod that counts towards ``podgroup``; InvalidObject when the pod cannot be read."""
    parsed = parse_pod(pod)
    request = parsed.request
    base = {name: amount for name, amount in request.amounts.items() if name != names.PODS}
    requested = dict(base)
    if request.gpu_kind in (GpuRequestKind.REGULAR, GpuRequestKind.FRACTION):
        requested[names.GPU] = request.gpus
    elif request.gpu_kind is GpuRequestKind.MEMORY:
        requested[GPU_MEMORY_RESOURCE] = float(request.gpu_memory_mib * request.gpu_devices)
    if not (parsed.phase == "Running" or (parsed.phase == "Pending" and parsed.node_name)):
        return PodUsage(podgroup, _exact(requested, parsed.key), None)
    allocated = dict(base)
    shared_mib = 0
    if request.gpu_kind is GpuRequestKind.REGULAR:
        allocated[names.GPU] = request.gpus
    elif request.is_shared_gpu and parsed.received_resource_type == "Fraction":
        if request.gpu_kind is GpuRequestKind.FRACTION:
            allocated[names.GPU] = request.gpus
        else:
            shared_mib = request.gpu_devices * request.gpu_memory_mib
    node = parsed.node_name if shared_mib else ""
    return PodUsage(podgroup, _exact(requested, parsed.key), _exact(allocated, parsed.key), node, shared_mib)


def shared_gpus(shared_mib: int, node_memory_mib: int) -> Frozen:
    """The GPUs a ``gpu-memory`` pod received as a fraction holds on a node with that much memory per GPU (none
    when the node does not say)."""
    if not node_memory_mib:
        return ()
    return freeze({names.GPU: exact(shared_mib / node_memory_mib)})


def node_gpu_memory(node: Mapping[str, Any] | None) -> int:
    """A node's ``nvidia.com/gpu.memory`` label in MiB; 0 when it has none (or none that is a whole number)."""
    meta = node.get("metadata") if node is not None else None
    labels = meta.get("labels") if isinstance(meta, Mapping) else None
    text = labels.get(names.GPU_MEMORY_NODE_LABEL) if isinstance(labels, Mapping) else None
    try:
        return int(text or 0)
    except (TypeError, ValueError):
        return 0


def _exact(totals: Mapping[str, float], pod: str) -> Frozen:
    amounts: dict[str, Amount] = {}
    for name, amount in totals.items():
        try:
            amounts[name] = exact(amount)
        except ValueError:
            field = f"resources.{name}"
            raise InvalidObject(f"Pod {pod}", field, f"sums to {amount}; allowed: a finite quantity") from None
    return freeze(amounts)

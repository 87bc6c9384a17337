"""What a pod asks of GPUs, read the way KAI's admission and binder read it
(``pkg/common/resources/gpu_sharing.go``, ``pkg/binder/common/gpu_access.go``): the GPU-sharing annotation, the
container that receives the shared GPU, the names of its GPU-sharing ConfigMaps, and the ``nvidia.com/gpu`` amounts
of each container."""

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from kai.core.model import names
from kai.core.model.errors import InvalidObject

CONTAINER_LISTS = ("initContainers", "containers")
"""Where KAI looks for the named fraction container: init containers first, then the regular ones."""


@dataclass(frozen=True, slots=True)
class ContainerRef:
    """A container by list and index; KAI names init containers' ConfigMaps ``-i<index>``."""

    list_name: str
    index: int

    @property
    def suffix(self) -> str:
        return f"i{self.index}" if self.list_name == "initContainers" else str(self.index)

    @property
    def path(self) -> str:
        return f"spec.{self.list_name}[{self.index}]"


def annotations_of(pod: Mapping[str, Any]) -> Mapping[str, str]:
    annotations = (pod.get("metadata") or {}).get("annotations") or {}
    return annotations if isinstance(annotations, Mapping) else {}


def sharing_annotation(annotations: Mapping[str, str]) -> str:
    """``gpu-fraction`` or ``gpu-memory`` when the pod asks for a share of a GPU (the fraction decides), else ""."""
    for name in (names.GPU_FRACTION_ANNOTATION, names.GPU_MEMORY_ANNOTATION):
        if name in annotations:
            return name
    return ""


def sharing_configmaps(prefix: str, ref: ContainerRef) -> tuple[str, str]:
    """The container's GPU-sharing ConfigMaps, from the pod's ``runai/shared-gpu-configmap`` prefix: the
    capabilities one (``<prefix>-<index>``, ``-i<index>`` for an init container) and the ``-evar`` one."""
    capabilities = f"{prefix}-{ref.suffix}"
    return capabilities, f"{capabilities}-evar"


def containers(spec: Mapping[str, Any]) -> Iterator[tuple[ContainerRef, dict[str, Any]]]:
    """Every container that is a mapping, init containers first."""
    for list_name in CONTAINER_LISTS:
        entries = spec.get(list_name)
        if not isinstance(entries, list):
            continue
        for index, container in enumerate(entries):
            if isinstance(container, dict):
                yield ContainerRef(list_name, index), container


def gpu_amount(container: Mapping[str, Any], section: str) -> object | None:
    """The container's ``nvidia.com/gpu`` under ``resources.requests`` or ``resources.limits`` (None if unset)."""
    resources = container.get("resources")
    amounts = resources.get(section) if isinstance(resources, Mapping) else None
    return amounts.get(names.GPU) if isinstance(amounts, Mapping) else None


def fraction_container(pod: Mapping[str, Any], obj: str) -> ContainerRef | None:
    """The container that receives the shared GPU: the one ``gpu-fraction-container-name`` names, else the first
    regular container; None when the pod has no containers (the API server refuses it)."""
    spec = pod.get("spec") or {}
    regular = spec.get("containers")
    if not isinstance(regular, list) or not regular:
        return None
    wanted = annotations_of(pod).get(names.GPU_FRACTION_CONTAINER_ANNOTATION)
    if wanted is None:
        return ContainerRef("containers", 0)
    for ref, container in containers(spec):
        if container.get("name") == wanted:
            return ref
    available = ", ".join(str(c.get("name")) for _, c in containers(spec))
    raise InvalidObject(
        obj,
        f"metadata.annotations.{names.GPU_FRACTION_CONTAINER_ANNOTATION}",
        f"names container {wanted!r}, which the pod does not have; allowed: one of its containers ({available})",
        kai=f"failed to get fraction container ref: container with name {wanted} not found for fraction request",
    )

"""What a pod's containers ask for, and what the pod asks for as a whole, as the kubelet counts it.

Each container's request is its ``resources.requests`` (a missing request defaults to its limit, as the API server
does), raised during an in-place resize (``pods/resize``, KEP-1287) to what the kubelet reports in the container's
status, as KAI's effective-request model (KAI #2021) and Kubernetes' own quota do: the largest of the spec, the
status' ``resources.requests`` and ``allocatedResources``, so that a pod being resized is charged for both sizes until
the resize is done; when the kubelet found the resize ``Infeasible`` (``PodResizePending``), the spec's new size
is left out, as it will not be granted. A container the kubelet reports no ``resources`` for is its spec.

The pod's request (KAI v0.17): app containers plus native sidecars (init containers with ``restartPolicy:
Always``, which keep running), raised to the peak of any other init container together with the sidecars started
before it, plus pod overhead, plus one ``pods`` unit.
"""

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from kai.core.model import names
from kai.core.model.errors import InvalidObject
from kai.core.model.meta import Raw, mapping, sequence, string
from kai.core.model.quantity import resource_amount

APP, SIDECAR, INIT = "app", "sidecar", "init"
GUARANTEED, BURSTABLE, BEST_EFFORT = "Guaranteed", "Burstable", "BestEffort"
_QOS_RESOURCES = (names.CPU, names.MEMORY)


@dataclass(frozen=True, slots=True)
class ContainerRequest:
    kind: str
    """``APP``, ``SIDECAR`` (a native sidecar) or ``INIT`` (an init container that ends before the apps start)."""
    requests: Mapping[str, float]
    """Its effective request, in the scheduler's units."""
    cpu_whole: bool
    """Its cpu request is a whole number of cpus (only such cpus the kubelet's static CPU manager pins to a NUMA
    zone)."""


def _amounts(requests: Mapping[str, Any], obj: str, field: str) -> dict[str, float]:
    return {str(name): resource_amount(str(name), value, obj, f"{field}.{name}") for name, value in requests.items()}


def _spec_requests(container: Raw, obj: str, field: str) -> tuple[dict[str, float], dict[str, float]]:
    """The container's requests (a missing one defaults to its limit) and its limits."""
    resources = mapping(container, "resources", obj, f"{field}.resources")
    limits = _amounts(mapping(resources, "limits", obj, f"{field}.resources.limits"), obj, f"{field}.resources.limits")
    requests = _amounts(
        mapping(resources, "requests", obj, f"{field}.resources.requests"), obj, f"{field}.resources.requests"
    )
    for name, value in limits.items():
        requests.setdefault(name, value)
    return requests, limits


def _resize_infeasible(status: Raw, obj: str) -> bool:
    for condition in sequence(status, "conditions", obj, "status.conditions"):
        if isinstance(condition, Mapping) and condition.get("type") == "PodResizePending":
            return condition.get("status") == "True" and condition.get("reason") == "Infeasible"
    return False


def _effective(
    spec: dict[str, float], reported: Raw | None, infeasible: bool, obj: str, field: str
) -> dict[str, float]:
    """``spec`` raised to the status' sizes while a resize is in progress (see the module docstring)."""
    if reported is None or reported.get("resources") is None:
        return spec
    enacted = mapping(mapping(reported, "resources", obj, f"{field}.resources"), "requests", obj, field)
    allocated = mapping(reported, "allocatedResources", obj, f"{field}.allocatedResources")
    effective: dict[str, float] = {} if infeasible else dict(spec)
    for source, where in ((enacted, "resources.requests"), (allocated, "allocatedResources")):
        for name, amount in _amounts(source, obj, f"{field}.{where}").items():
            effective[name] = max(effective.get(name, 0.0), amount)
    return effective


def container_requests(spec: Raw, status: Raw, obj: str) -> tuple[tuple[ContainerRequest, ...], str]:
    """Every container's effective request (init containers first, in order), and the pod's QoS class: the
    ``status.qosClass`` the API server sets, else worked out as it does (for pods that never met one)."""
    infeasible = _resize_infeasible(status, obj)
    containers = sequence(spec, "containers", obj, "spec.containers")
    if not containers:
        raise InvalidObject(obj, "spec.containers", "is required: a pod has at least one container")
    found: list[ContainerRequest] = []
    guaranteed, any_request = True, False
    for key, status_key in (("initContainers", "initContainerStatuses"), ("containers", "containerStatuses")):
        reported = {
            string(entry, "name", obj, f"status.{status_key}[{i}].name"): entry
            for i, entry in enumerate(sequence(status, status_key, obj, f"status.{status_key}"))
        }
        for i, container in enumerate(sequence(spec, key, obj, f"spec.{key}")):
            field = f"spec.{key}[{i}]"
            if not isinstance(container, Mapping):
                raise InvalidObject(obj, field, f"got {container!r}; expected a container (a mapping)")
            requests, limits = _spec_requests(container, obj, field)
            any_request = any_request or any(requests.get(r) or limits.get(r) for r in _QOS_RESOURCES)
            guaranteed = guaranteed and all(limits.get(r) and requests.get(r) == limits[r] for r in _QOS_RESOURCES)
            kind = APP if key == "containers" else SIDECAR if container.get("restartPolicy") == "Always" else INIT
            if kind != INIT:
                requests = _effective(requests, reported.get(str(container.get("name", ""))), infeasible, obj, field)
            found.append(ContainerRequest(kind, requests, requests.get(names.CPU, 0.0) % 1000 == 0))
    qos = string(status, "qosClass", obj, "status.qosClass")
    if not qos:
        qos = BEST_EFFORT if not any_request else GUARANTEED if guaranteed else BURSTABLE
    return tuple(found), qos


def pod_amounts(containers: tuple[ContainerRequest, ...], spec: Raw, obj: str) -> dict[str, float]:
    """The pod's effective request as the kubelet aggregates it (see the module docstring)."""
    total: dict[str, float] = {}
    sidecars: dict[str, float] = {}
    init_peak: dict[str, float] = {}
    for container in containers:
        if container.kind == APP:
            add(total, container.requests)
        elif container.kind == SIDECAR:
            add(sidecars, container.requests)
        else:
            during = dict(container.requests)
            add(during, sidecars)
            for name, amount in during.items():
                init_peak[name] = max(init_peak.get(name, 0.0), amount)
    add(total, sidecars)
    for name, amount in init_peak.items():
        total[name] = max(total.get(name, 0.0), amount)
    for name, value in mapping(spec, "overhead", obj, "spec.overhead").items():
        total[name] = total.get(name, 0.0) + resource_amount(name, value, obj, f"spec.overhead.{name}")
    total[names.PODS] = 1.0
    return total


def add(total: dict[str, float], amounts: Mapping[str, float]) -> None:
    for name, amount in amounts.items():
        total[name] = total.get(name, 0.0) + amount

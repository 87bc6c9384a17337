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
from typing import Any, NamedTuple

from kai.core.model import names
from kai.core.model.errors import InvalidObject
from kai.core.model.meta import Raw, mapping, sequence, string
from kai.core.model.quantity import resource_amount

APP, SIDECAR, INIT = "app", "sidecar", "init"
GUARANTEED, BURSTABLE, BEST_EFFORT = "Guaranteed", "Burstable", "BestEffort"
_QOS_RESOURCES = (names.CPU, names.MEMORY)


class ContainerRequest(NamedTuple):
    """One container's effective request (a tuple: a pod has several, and pods are parsed by the hundred thousand)."""

    kind: str
    """``APP``, ``SIDECAR`` (a native sidecar) or ``INIT`` (an init container that ends before the apps start)."""
    requests: Mapping[str, float]
    """Its effective request, in the scheduler's units."""


def _amounts(requests: Mapping[str, Any], obj: str, field: str) -> dict[str, float]:
    return {str(name): resource_amount(str(name), value, obj, f"{field}.{name}") for name, value in requests.items()}


def _map(raw: Raw, key: str, obj: str, field: str) -> Raw:
    """``raw[key]`` as a mapping ({} when absent); the field's name is made only for the error (a hot path)."""
    value = raw.get(key)
    if value is None:
        return _EMPTY
    if isinstance(value, Mapping):
        return value
    return mapping(raw, key, obj, field)  # raises, naming the field


_EMPTY: Raw = {}


def _resize_infeasible(status: Raw, obj: str) -> bool:
    for condition in sequence(status, "conditions", obj, "status.conditions"):
        if isinstance(condition, Mapping) and condition.get("type") == "PodResizePending":
            return condition.get("status") == "True" and condition.get("reason") == "Infeasible"
    return False


def _effective(
    spec: dict[str, float], written: Raw, reported: Raw | None, status: Raw, obj: str, field: str
) -> dict[str, float]:
    """``spec`` (``written`` as the pod has it) raised to the status' sizes while a resize is in progress (see the
    module docstring). The kubelet reports every running container's resources, nearly always the spec's own
    quantities: then nothing is read again."""
    if reported is None or reported.get("resources") is None:
        return spec
    enacted = _map(_map(reported, "resources", obj, f"{field}.resources"), "requests", obj, f"{field}.resources")
    allocated = _map(reported, "allocatedResources", obj, f"{field}.allocatedResources")
    if _within(enacted, written) and _within(allocated, written):
        return spec
    effective: dict[str, float] = {} if _resize_infeasible(status, obj) else dict(spec)
    for source, where in ((enacted, "resources.requests"), (allocated, "allocatedResources")):
        for name, amount in _amounts(source, obj, f"{field}.{where}").items():
            effective[name] = max(effective.get(name, 0.0), amount)
    return effective


def _within(reported: Raw, written: Raw) -> bool:
    """Every quantity ``reported`` is written the same way in ``written``."""
    return all(written.get(name) == value for name, value in reported.items())


def _qos(containers: list[Raw], obj: str) -> str:
    """The QoS class the API server gives a pod of these containers (cpu and memory: Guaranteed when every
    container has limits and requests equal to them, BestEffort when none asks for either)."""
    asked, guaranteed = False, True
    for i, container in enumerate(containers):
        resources = mapping(container, "resources", obj, f"spec.containers[{i}].resources")
        limits = _amounts(mapping(resources, "limits", obj, "limits"), obj, "limits")
        requests = {**limits, **_amounts(mapping(resources, "requests", obj, "requests"), obj, "requests")}
        asked = asked or any(requests.get(r) or limits.get(r) for r in _QOS_RESOURCES)
        guaranteed = guaranteed and all(limits.get(r) and requests.get(r) == limits[r] for r in _QOS_RESOURCES)
    return BEST_EFFORT if not asked else GUARANTEED if guaranteed else BURSTABLE


def _check_limit(name: str, request: float, limit: float, obj: str, field: str) -> None:
    """What the API server refuses (its ValidateResourceRequirements): a request above its limit, and an extended
    resource (nvidia.com/gpu) whose request is not its limit (extended resources are never overcommitted)."""
    if request > limit:
        raise InvalidObject(obj, field, f"got {request:g}, above its limit of {limit:g}; the API server refuses it")
    domain = name.partition("/")[0] if "/" in name else ""
    extended = bool(domain) and domain != "kubernetes.io" and not domain.endswith(".kubernetes.io")
    if extended and request != limit:
        raise InvalidObject(
            obj,
            field,
            f"got {request:g} with a limit of {limit:g}: the request of an extended resource must equal its limit "
            "(the API server refuses it)",
        )


def container_requests(spec: Raw, status: Raw, obj: str) -> tuple[tuple[ContainerRequest, ...], str]:
    """Every container's effective request (init containers first, in order), and the pod's QoS class: the
    ``status.qosClass`` the API server sets, else worked out as it does (for pods that never met one)."""
    if not sequence(spec, "containers", obj, "spec.containers"):
        raise InvalidObject(obj, "spec.containers", "is required: a pod has at least one container")
    found: list[ContainerRequest] = []
    qos = string(status, "qosClass", obj, "status.qosClass")
    seen: list[Raw] | None = None if qos else []
    for key, status_key in (("initContainers", "initContainerStatuses"), ("containers", "containerStatuses")):
        containers = sequence(spec, key, obj, f"spec.{key}")
        if not containers:
            continue
        statuses = status.get(status_key) or ()
        if not isinstance(statuses, list):
            sequence(status, status_key, obj, f"status.{status_key}")  # raises, naming the field
        reported = {entry.get("name"): entry for entry in statuses if isinstance(entry, Mapping)}
        for i, container in enumerate(containers):
            field = f"spec.{key}[{i}]"
            if not isinstance(container, Mapping):
                raise InvalidObject(obj, field, f"got {container!r}; expected a container (a mapping)")
            if seen is not None:
                seen.append(container)
            resources = _map(container, "resources", obj, f"{field}.resources")
            written = _map(resources, "requests", obj, f"{field}.resources.requests")
            requests = _amounts(written, obj, f"{field}.resources.requests")
            for name, value in _map(resources, "limits", obj, f"{field}.resources.limits").items():
                if name not in requests:  # Kubernetes defaults a missing request to its limit
                    requests[str(name)] = resource_amount(str(name), value, obj, f"{field}.resources.limits.{name}")
                elif written.get(name) != value:  # written alike, they are equal: nothing to read again
                    limit = resource_amount(str(name), value, obj, f"{field}.resources.limits.{name}")
                    _check_limit(str(name), requests[str(name)], limit, obj, f"{field}.resources.requests.{name}")
            kind = APP if key == "containers" else SIDECAR if container.get("restartPolicy") == "Always" else INIT
            if kind != INIT:
                requests = _effective(requests, written, reported.get(container.get("name")), status, obj, field)
            found.append(ContainerRequest(kind, requests))
    return tuple(found), qos or _qos(seen or [], obj)


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

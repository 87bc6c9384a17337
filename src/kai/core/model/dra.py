"""Dynamic resource allocation objects (resource.k8s.io/v1) as the scheduler reads them (scenario-format.md §3.7).

A ResourceSlice lists the devices one node offers through one driver; a ResourceClaim asks for devices of a device
class (a number of them, or all); a pod names its claims directly (a shared claim) or through a template (its own
claim, whose name the pod's status gives). Devices of a GPU driver count as the node's GPUs, and claims of a GPU
device class count as the pod's GPUs for queue accounting.
"""

from dataclasses import dataclass

from kai.core.model.errors import InvalidObject
from kai.core.model.meta import Metadata, Raw, integer, mapping, object_ref, sequence, string

GPU_DRIVERS = ("nvidia.com/gpu",)


RESERVED_FOR_MAX = 256
"""Kubernetes' ResourceClaimReservedForMaxSize: at most this many pods may use one claim."""


@dataclass(frozen=True, slots=True)
class Device:
    driver: str
    pool: str
    name: str


@dataclass(frozen=True, slots=True)
class ResourceSlice:
    name: str
    node_name: str
    devices: tuple[Device, ...]

    @property
    def is_gpu(self) -> bool:
        return any(device.driver in GPU_DRIVERS for device in self.devices)


@dataclass(frozen=True, slots=True)
class ClaimRequest:
    name: str
    device_class: str
    all_devices: bool
    count: int

    @property
    def is_gpu(self) -> bool:
        return self.device_class in GPU_DRIVERS


@dataclass(frozen=True, slots=True)
class ResourceClaim:
    meta: Metadata
    requests: tuple[ClaimRequest, ...]
    allocated: tuple[tuple[str, Device], ...]
    """(request name, device) pairs of an existing allocation."""
    reserved_for: tuple[str, ...]
    """UIDs of the pods using the claim."""

    @property
    def key(self) -> str:
        return self.meta.key

    @property
    def gpus(self) -> int:
        return sum(request.count for request in self.requests if request.is_gpu and not request.all_devices)


def parse_resource_slice(raw: Raw) -> ResourceSlice:
    meta = Metadata(raw, "ResourceSlice", namespaced=False)
    obj = object_ref("ResourceSlice", raw)
    spec = mapping(raw, "spec", obj, "spec")
    driver = string(spec, "driver", obj, "spec.driver")
    pool = string(mapping(spec, "pool", obj, "spec.pool"), "name", obj, "spec.pool.name")
    devices = tuple(
        Device(driver, pool, string(device, "name", obj, f"spec.devices[{i}].name"))
        for i, device in enumerate(sequence(spec, "devices", obj, "spec.devices"))
    )
    return ResourceSlice(meta.name, string(spec, "nodeName", obj, "spec.nodeName"), devices)


def parse_resource_claim(raw: Raw) -> ResourceClaim:
    meta = Metadata(raw, "ResourceClaim", namespaced=True)
    obj = object_ref("ResourceClaim", raw)
    spec = mapping(raw, "spec", obj, "spec")
    devices = mapping(spec, "devices", obj, "spec.devices")
    requests = []
    for i, request in enumerate(sequence(devices, "requests", obj, "spec.devices.requests")):
        field = f"spec.devices.requests[{i}]"
        exactly = mapping(request, "exactly", obj, f"{field}.exactly") or request
        mode = string(exactly, "allocationMode", obj, f"{field}.exactly.allocationMode", "ExactCount")
        if mode not in ("ExactCount", "All"):
            raise InvalidObject(obj, f"{field}.exactly.allocationMode", f"got {mode!r}; allowed: ExactCount, All")
        requests.append(
            ClaimRequest(
                name=string(request, "name", obj, f"{field}.name"),
                device_class=string(exactly, "deviceClassName", obj, f"{field}.exactly.deviceClassName"),
                all_devices=mode == "All",
                count=integer(exactly, "count", obj, f"{field}.exactly.count", 1) or 1,
            )
        )
    status = mapping(raw, "status", obj, "status")
    allocation = mapping(mapping(status, "allocation", obj, "status.allocation"), "devices", obj, "status.allocation")
    allocated = tuple(
        (
            string(result, "request", obj, f"status.allocation.devices.results[{i}].request"),
            Device(
                string(result, "driver", obj, f"status.allocation.devices.results[{i}].driver"),
                string(result, "pool", obj, f"status.allocation.devices.results[{i}].pool"),
                string(result, "device", obj, f"status.allocation.devices.results[{i}].device"),
            ),
        )
        for i, result in enumerate(sequence(allocation, "results", obj, "status.allocation.devices.results"))
    )
    reserved = tuple(
        string(consumer, "uid", obj, f"status.reservedFor[{i}].uid")
        for i, consumer in enumerate(sequence(status, "reservedFor", obj, "status.reservedFor"))
    )
    return ResourceClaim(meta, tuple(requests), allocated, reserved)


@dataclass(frozen=True, slots=True)
class PodClaim:
    """A claim a pod uses under ``name``: by claim name (shared) or generated from a template (the pod's own)."""

    name: str
    claim_name: str
    from_template: bool


def pod_claims(spec: Raw, status: Raw, obj: str) -> tuple[PodClaim, ...]:
    generated = {
        string(entry, "name", obj, "status.resourceClaimStatuses[].name"): string(
            entry, "resourceClaimName", obj, "status.resourceClaimStatuses[].resourceClaimName"
        )
        for entry in sequence(status, "resourceClaimStatuses", obj, "status.resourceClaimStatuses")
    }
    claims = []
    for i, entry in enumerate(sequence(spec, "resourceClaims", obj, "spec.resourceClaims")):
        name = string(entry, "name", obj, f"spec.resourceClaims[{i}].name")
        direct = string(entry, "resourceClaimName", obj, f"spec.resourceClaims[{i}].resourceClaimName")
        if direct:
            claims.append(PodClaim(name, direct, False))
        elif generated.get(name):
            claims.append(PodClaim(name, generated[name], True))
    return tuple(claims)

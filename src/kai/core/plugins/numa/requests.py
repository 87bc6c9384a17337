"""What a pod asks a node's NUMA zones for: the units the kubelet's Topology Manager aligns.

With ``pod`` scope the whole pod is one unit. With ``container`` scope each app container and native sidecar is a
unit, and they run together, so each takes from what the others left ("concurrent"); each other init container is
a unit aligned on its own against the zones as they are, never added up ("serial": it ends before the apps start).
CPU counts only where the kubelet's static CPU manager pins it: whole cpus of a Guaranteed pod; a fractional cpu
stays in the shared pool and constrains no zone.
"""

from collections.abc import Mapping
from dataclasses import dataclass

from kai.core.model import names
from kai.core.model.objects import Pod
from kai.core.model.pod_requests import APP, GUARANTEED, INIT, SIDECAR, ContainerRequest
from kai.core.model.resources import GpuRequestKind


@dataclass(frozen=True, slots=True)
class NumaRequests:
    pod: Mapping[str, float]
    concurrent: tuple[Mapping[str, float], ...]
    serial: tuple[Mapping[str, float], ...]

    def for_scope(self, scope: str) -> tuple[tuple[Mapping[str, float], ...], tuple[Mapping[str, float], ...]]:
        return ((self.pod,), ()) if scope == "pod" else (self.concurrent, self.serial)


def _pinned_cpu(pod: Pod, container: ContainerRequest) -> float:
    cpu = container.requests.get(names.CPU, 0.0)
    return cpu if pod.qos_class == GUARANTEED and cpu % 1000 == 0 else 0.0


def _with_cpu(amounts: Mapping[str, float], cpu: float) -> dict[str, float]:
    return {**amounts, names.CPU: cpu}


def numa_requests(pod: Pod) -> NumaRequests:
    init_peak = sidecars = 0.0
    for container in pod.containers:
        if container.kind == SIDECAR:
            sidecars += _pinned_cpu(pod, container)
        elif container.kind == INIT:
            init_peak = max(init_peak, sidecars + _pinned_cpu(pod, container))
    long_running = sidecars + sum(_pinned_cpu(pod, c) for c in pod.containers if c.kind == APP)
    whole_pod = dict(pod.request.amounts)
    if pod.request.gpu_kind is GpuRequestKind.REGULAR:
        whole_pod[names.GPU] = pod.request.gpus
    return NumaRequests(
        _with_cpu(whole_pod, max(long_running, init_peak)),
        tuple(
            _with_cpu(c.requests, _pinned_cpu(pod, c))
            for kind in (SIDECAR, APP)
            for c in pod.containers
            if c.kind == kind
        ),
        tuple(_with_cpu(c.requests, _pinned_cpu(pod, c)) for c in pod.containers if c.kind == INIT),
    )

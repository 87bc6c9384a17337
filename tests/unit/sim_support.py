"""Manifests `kai simulate`'s tests start from (a queue that never limits, a GPU node, queues with GPU quotas,
GPU pods, PodDisruptionBudgets), and a simulation of them cycle by cycle on a running clock."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from kai.components.sim.runner import CycleRecord, Simulation
from kai.components.sim.scenario import ClockSpec, Runner, Scenario
from kai.core.config import parse_config

UNLIMITED = {"quota": -1, "limit": -1, "overQuotaWeight": 1}
QUEUE: dict[str, Any] = {
    "apiVersion": "scheduling.run.ai/v2",
    "kind": "Queue",
    "metadata": {"name": "team"},
    "spec": {"resources": dict.fromkeys(("gpu", "cpu", "memory"), UNLIMITED)},
}


def node(name: str, gpus: int) -> dict[str, Any]:
    allocatable = {"cpu": "64", "memory": "512Gi", "nvidia.com/gpu": str(gpus), "pods": "110"}
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name}, "status": {"allocatable": allocatable}}


NAMESPACE = "ns"


def queue(name: str, quota: float = -1, limit: float = -1, **annotations: str) -> dict[str, Any]:
    """A queue with a GPU quota and limit (the rest unlimited), annotated as given."""
    resources = dict.fromkeys(("cpu", "memory"), UNLIMITED) | {
        "gpu": {"quota": quota, "limit": limit, "overQuotaWeight": 1}
    }
    meta: dict[str, Any] = {"name": name, "annotations": dict(annotations)}
    return {"apiVersion": "scheduling.run.ai/v2", "kind": "Queue", "metadata": meta, "spec": {"resources": resources}}


def gpu_pod(
    name: str, queue_name: str, on: str = "", labels: dict[str, str] | None = None, gpus: int = 1
) -> dict[str, Any]:
    """A bare pod asking for whole GPUs, in ``queue_name``; ``on``: already running on that node."""
    limits = {"nvidia.com/gpu": str(gpus)}
    pod: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": NAMESPACE,
            "uid": f"uid-{name}",
            "labels": {"kai.scheduler/queue": queue_name, **(labels or {})},
        },
        "spec": {
            "schedulerName": "kai-scheduler",
            "containers": [{"name": "main", "resources": {"requests": limits, "limits": limits}}],
        },
        "status": {"phase": "Pending"},
    }
    if on:
        pod["spec"]["nodeName"] = on
        pod["status"] = {"phase": "Running", "startTime": "1970-01-01T00:00:00Z"}
    return pod


def pdb(name: str, labels: dict[str, str], **spec: int | str) -> dict[str, Any]:
    """A PodDisruptionBudget over the pods with ``labels`` (``minAvailable=3`` or ``maxUnavailable="50%"``)."""
    return {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": {"name": name, "namespace": NAMESPACE},
        "spec": {"selector": {"matchLabels": labels}, **spec},
    }


def simulation(
    objects: list[dict[str, Any]], config: dict[str, Any] | None = None, period_s: float = 10.0
) -> Simulation:
    """The objects on the embedded cluster with the real scheduler, ``period_s`` simulated seconds per cycle."""
    clock = ClockSpec(period_s=period_s)
    scenario = Scenario(Path("<test>"), "test", parse_config(config or {}), 0.0, objects, {}, Runner(), clock=clock)
    return Simulation(scenario)


def step(sim: Simulation) -> CycleRecord:
    """One cycle, its decisions written and the world moved on."""
    record = sim.cycle(len(sim.timeline) + 1)
    sim.advance(record)
    return record


def phases(sim: Simulation) -> dict[str, str]:
    """Each pod's phase by name."""
    return {p["metadata"]["name"]: p["status"].get("phase", "") for p in sim.cluster.list("Pod")}

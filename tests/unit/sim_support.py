"""Manifests `kai simulate`'s tests start from: a queue that never limits, and a GPU node."""

from __future__ import annotations

from typing import Any

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

"""The queues KAI's install creates: default-parent-queue → default-queue; pods without a queue land there."""

from typing import Any

from kai.cluster.port import ClusterClient, Raw


def default_queue(name: str, parent: str) -> Raw:
    unlimited = {"quota": -1, "limit": -1, "overQuotaWeight": 1}
    spec: dict[str, Any] = {"resources": {"gpu": dict(unlimited), "cpu": dict(unlimited), "memory": dict(unlimited)}}
    if parent:
        spec["parentQueue"] = parent
    return {"apiVersion": "scheduling.run.ai/v2", "kind": "Queue", "metadata": {"name": name}, "spec": spec}


def ensure_default_queues(cluster: ClusterClient) -> None:
    for name, parent in (("default-parent-queue", ""), ("default-queue", "default-parent-queue")):
        if cluster.get("Queue", name) is None:
            cluster.create("Queue", default_queue(name, parent))

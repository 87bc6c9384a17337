"""What a scenario observes after a cycle: every pod's and podgroup's status, node GPU use, and counts."""

from dataclasses import dataclass, field
from typing import Any

from kai.core.framework.decisions import CycleResult
from kai.core.model.resources import GpuRequestKind
from kai.core.state.fit_errors import render_detailed
from kai.core.state.pod_status import ACTIVE_USED
from kai.core.state.resource_index import GPU_ROW
from kai.core.state.snapshot import ClusterInfo
from kai.core.state.task import TaskInfo


@dataclass
class Outcome:
    pods: dict[str, dict[str, Any]] = field(default_factory=dict)
    podgroups: dict[str, dict[str, Any]] = field(default_factory=dict)
    nodes: dict[str, dict[str, Any]] = field(default_factory=dict)
    counts: dict[str, int] = field(default_factory=dict)


def _pod_view(task: TaskInfo) -> dict[str, Any]:
    request = task.request
    placed = task.status in ACTIVE_USED and bool(task.node_name)
    requested = request.gpus if request.gpu_kind in (GpuRequestKind.REGULAR, GpuRequestKind.FRACTION) else 0.0
    accepted = task.accepted_gpus if placed else 0.0
    return {
        "podgroup": task.job_key,
        "status": task.status.value,
        "node": task.node_name,
        "gpuGroups": list(task.gpu_groups),
        "requestedGPUs": requested,
        "acceptedGPUs": accepted,
        "requestedMilliCPU": request.milli_cpu,
        "requestedMemory": request.memory_bytes,
        "numaZones": sorted(zone.zone for zone in task.numa_placement or ()),
    }


def observe(cluster: ClusterInfo, result: CycleResult | None) -> Outcome:
    outcome = Outcome()
    jobs = {**cluster.unschedulable_jobs, **cluster.jobs}
    for key, job in jobs.items():
        views = []
        for task in job.tasks.values():
            view = _pod_view(task)
            outcome.pods[task.key] = view
            views.append(view)
        statuses = {v["status"] for v in views}
        placed_nodes = {v["node"] for v in views}
        outcome.podgroups[key] = {
            "status": statuses.pop() if len(statuses) == 1 else ",".join(sorted(statuses)),
            "node": placed_nodes.pop() if len(placed_nodes) == 1 else "",
            "queue": job.queue,
            "requestedGPUs": sum(v["requestedGPUs"] for v in views),
            "acceptedGPUs": sum(v["acceptedGPUs"] for v in views),
            "requestedMilliCPU": sum(v["requestedMilliCPU"] for v in views),
            "requestedMemory": sum(v["requestedMemory"] for v in views),
            "lastStartTimestamp": job.last_start_ts,
            "fitErrorMessage": render_detailed(job.fit_errors) if job.fit_errors else "",
        }
    table = cluster.nodes
    for info in table.infos:
        outcome.nodes[info.name] = {
            "idleGPUs": float(table.idle[GPU_ROW, info.column]),
            "releasingGPUs": float(table.releasing[GPU_ROW, info.column]),
        }
    if result is not None:
        for name, ledger in result.numa.items():
            outcome.nodes[name]["numaZonesAvailable"] = ledger.available_by_zone()
        outcome.counts = {
            "binds": len(result.binds),
            "evictions": len(result.evictions),
            "pipelined": len(result.pipelined),
        }
    return outcome

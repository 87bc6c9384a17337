"""Everything a session can read from a snapshot, as plain data: two snapshots that give equal views are the same
to every action and plugin (the orders of dicts included)."""

from typing import Any

import numpy as np

from kai.core.state.fit_errors import JobFitError, TaskFitErrors
from kai.core.state.node_table import NodeTable
from kai.core.state.podgroup_info import PodGroupInfo, PodSet, SubGroupSet
from kai.core.state.snapshot import WAITING, ClusterInfo
from kai.core.state.task import TaskInfo


def snapshot_view(info: ClusterInfo) -> dict[str, Any]:
    order = info.job_order
    return {
        "nodes": _table(info.nodes),
        "jobs": [_job(job) for job in info.jobs.values()],
        "jobs in order": sorted(info.jobs, key=order.__getitem__) == list(info.jobs),
        "unschedulable": [_job(job) for job in info.unschedulable_jobs.values()],
        "queues": [
            (q.uid, q.name, q.parent, q.priority, q.creation_ts, id(q.queue), list(q.children))
            for q in info.queues.values()
        ],
        "topologies": id(info.topologies),
        "bind requests to delete": list(info.bind_requests_to_delete),
        "gpu memory": (info.min_node_gpu_memory, info.max_node_gpu_memory),
        "claims": id(info.claims),
        "devices": {node: list(devices) for node, devices in info.devices.items()},
        "changed": list(info.changed),
        "waiting": sorted(info.waiting),
        "maybe stale": sorted(info.maybe_stale),
    }


def indexes_hold(info: ClusterInfo) -> None:
    """The snapshot's job indexes say what its jobs are."""
    waiting = {key for key, job in info.jobs.items() if any(t.status in WAITING for t in job.tasks.values())}
    assert set(info.waiting) == waiting
    stale = {key for key, job in info.jobs.items() if job.stale_ts is not None or not job.is_gang_satisfied()}
    assert set(info.maybe_stale) == stale


def _table(table: NodeTable) -> dict[str, Any]:
    return {
        "index": list(table.index.names),
        "arrays": [
            np.asarray(getattr(table, name)).tobytes()
            for name in ("allocatable", "idle", "used", "releasing", "gpu_memory", "ready", "cpu_only")
        ],
        "mig rows": list(table.mig_rows),
        "shared columns": sorted(table.shared_columns),
        "jobless columns": sorted(table.jobless_columns),
        "affinity columns": sorted(table.affinity_columns),
        "version": table.version,
        "by name": list(table.by_name) == [info.name for info in table.infos],
        "nodes": [
            (
                info.name,
                info.column,
                info.gpu_count,
                id(info.node),
                [_task(task) for task in info.tasks.values()],
                sorted(info.legacy_mig_tasks),
                (info.shared.used, info.shared.allocated, info.shared.releasing, sorted(info.shared.marked_releasing)),
            )
            for info in table.infos
        ],
    }


def _job(job: PodGroupInfo) -> dict[str, Any]:
    return {
        "key": job.key,
        "podgroup": id(job.podgroup),
        "fields": (job.name, job.namespace, job.queue, job.priority, job.preemptible, job.creation_ts),
        "times": (job.last_start_ts, job.last_eviction_ts, job.stale_ts),
        "fit errors": [_fit_error(error) for error in job.fit_errors],
        "task fit errors": {key: _task_fit_errors(errors) for key, errors in job.task_fit_errors.items()},
        "caches": (job.tasks_to_allocate_cache, job.init_request_cache),
        "reports changes": job.journal is not None,
        "tasks": [_task(task) for task in job.tasks.values()],
        "pod sets": [
            (name, pod_set.name, pod_set.min_available, pod_set.topology, list(pod_set.tasks), _parent(pod_set))
            for name, pod_set in job.pod_sets.items()
        ],
        "root": _set(job.root),
    }


def _task(task: TaskInfo) -> tuple[Any, ...]:
    return (
        task.key,
        id(task.pod),
        task.status,
        task.node_name,
        task.job_key,
        task.subgroup,
        task.req_vec.tobytes(),
        task.req_vec.flags.writeable,
        task.gpu_groups,
        task.accepted_gpus,
        task.dra_gpus,
        task.is_virtual,
    )


def _set(group: SubGroupSet) -> tuple[Any, ...]:
    return (
        group.name,
        group.topology,
        group.min_subgroup,
        [_set(child) for child in group.children],
        [pod_set.name for pod_set in group.pod_sets],
    )


def _parent(member: PodSet) -> str | None:
    return member.parent.name if member.parent is not None else None


def _fit_error(error: JobFitError) -> tuple[Any, ...]:
    return (error.reason, error.messages, error.detailed, error.subgroup, error.node_group, error.details, error.why)


def _task_fit_errors(errors: TaskFitErrors) -> str:
    return repr(errors)

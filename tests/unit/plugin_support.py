"""A bare session for a plugin's own tests, which open the plugin on it and call its hooks (no cycle): a snapshot of a
small cluster built with ``core_builders``, and no plugin opened yet."""

from typing import Any

import numpy as np
from core_builders import T0, cluster, node, pod, podgroup, queue

from kai.core.framework.config import SchedulerConfig
from kai.core.framework.eviction import candidates_queue
from kai.core.framework.session import Plugin, Session
from kai.core.framework.victims.scenario_search import SolveContext
from kai.core.state.snapshot import take_snapshot
from kai.core.state.task import TaskInfo

QUEUES = (("Queue", queue("root")), ("Queue", queue("q", parent="root")))
"""A queue ``q`` under ``root`` for the podgroups of these tests."""


def bare_session(*objects: tuple[str, dict[str, Any]], now: float = T0, **config: Any) -> Session:
    """A session over ``objects`` (with ``QUEUES``) and no plugin: each hook list is empty until a plugin fills it."""
    settings = SchedulerConfig(tiers=((),), **config)
    return Session(take_snapshot(cluster(*QUEUES, *objects), settings.scheduler_name, now), settings, now)


def opened(plugin: Plugin, *objects: tuple[str, dict[str, Any]], **config: Any) -> Session:
    """A bare session with ``plugin`` opened on it."""
    ssn = bare_session(*objects, **config)
    plugin.on_session_open(ssn)
    return ssn


def labelled(obj: dict[str, Any], labels: dict[str, str]) -> dict[str, Any]:
    """``obj`` with ``labels`` added."""
    obj["metadata"].setdefault("labels", {}).update(labels)
    return obj


def task(ssn: Session, pod_name: str) -> TaskInfo:
    """The task of pod ``default/<pod_name>``."""
    key = f"default/{pod_name}"
    return next(t for job in ssn.jobs.values() for k, t in job.tasks.items() if k == key)


def shared_gpu_node(name: str, gpus: int, gpu_memory_mib: int = 10000) -> dict[str, Any]:
    """A GPU node whose GPUs have ``gpu_memory_mib`` each (what fractions are measured against)."""
    shared = node(name, gpus)
    shared["metadata"]["labels"]["nvidia.com/gpu.memory"] = str(gpu_memory_mib)
    return shared


def fraction_pod(name: str, group: str, fraction: str, node_name: str = "", gpu_group: str = "") -> dict[str, Any]:
    """A pod asking for ``fraction`` of a GPU (``gpu-fraction``); placed on ``gpu_group`` of ``node_name`` if given."""
    shared = pod(name, group, gpus=0, node_name=node_name)
    shared["metadata"]["annotations"]["gpu-fraction"] = fraction
    if gpu_group:
        shared["metadata"]["labels"] = {"runai-gpu-group": gpu_group}
    return shared


def preemption(preemptor_pods: int) -> tuple[tuple[str, dict[str, Any]], ...]:
    """n0 (2 GPUs) runs train jobs a and b, n1 (1 GPU) runs train job c; a build gang ``big`` of ``preemptor_pods``
    1-GPU pods of the same queue wants their GPUs."""
    objects: list[tuple[str, dict[str, Any]]] = [("Node", node("n0", 2)), ("Node", node("n1", 1))]
    for name, where in (("a", "n0"), ("b", "n0"), ("c", "n1")):
        objects += [("PodGroup", podgroup(name, "q", T0 - 600)), ("Pod", pod(f"{name}-0", name, node_name=where))]
    objects.append(("PodGroup", podgroup("big", "q", T0, minMember=preemptor_pods, priority_class="build")))
    objects += [("Pod", pod(f"big-{i}", "big")) for i in range(preemptor_pods)]
    return tuple(objects)


def solve_context(ssn: Session, preemptor: str = "default/big") -> SolveContext:
    """What a scenario generator gets for ``preemptor``: every other job as a victim, every node feasible."""
    victims = {key: job for key, job in ssn.jobs.items() if key != preemptor}
    feasible = np.ones(len(ssn.nodes), dtype=bool)
    return SolveContext(ssn, "preempt", ssn.jobs[preemptor], [], lambda: candidates_queue(ssn, victims), feasible)

"""The dispatcher of the stand-ins: at a simulation's start every workload is expanded into what its controller
makes (``workload_makers.MAKERS``), and each workload that goes on over time is handed to its stand-in (``job``,
``cron_job``, ``ray_job``); at each step the stand-ins take their turn.

A workload that already owns objects in the input (a cluster's capture) is taken as it stands (a captured Job and
CronJob go on from there). What waits for pods to run is made once they do (a LeaderReady LWS group's workers, a
WaitForWorkersReady MPIJob's launcher, a RayJob's submitter). A workload kind the pod-grouper knows but no stand-in
makes pods for is reported (its pods must be in the input).
"""

from collections import deque
from dataclasses import dataclass, field
from typing import Any

from kai.cluster.memory import MemoryCluster
from kai.cluster.port import Raw
from kai.components.podgrouper.rules.hub import GROUPED_KINDS
from kai.components.sim.cron_jobs import CronJobSpec
from kai.components.sim.problems import ERROR, WARNING, Problem
from kai.components.sim.stand_ins.context import Context, create_new, owned_by, owner_key
from kai.components.sim.stand_ins.cron_job import CronJobStandIn
from kai.components.sim.stand_ins.job import JobStandIn
from kai.components.sim.stand_ins.ray_job import RayJobStandIn
from kai.components.sim.stand_ins.suspension import SuspensionStandIn
from kai.components.sim.workload_makers import API_GROUPS, EXPANDED, MAKERS, AfterRunning, api_group
from kai.components.sim.workload_objects import Invalid, link_owners, owner_refs
from kai.core.model import names
from kai.core.state.cluster_state import object_key


@dataclass
class WorkloadControllers:
    """Made at a simulation's start from its input: ``objects`` is the input and all that the stand-ins made."""

    objects: list[Raw]
    context: Context
    jobs: JobStandIn
    cron_jobs: CronJobStandIn
    ray_jobs: RayJobStandIn
    suspensions: SuspensionStandIn = field(default_factory=SuspensionStandIn)
    after_running: list[AfterRunning] = field(default_factory=list)
    """What is made once a pod runs (``step``)."""

    @property
    def problems(self) -> list[Problem]:
        return self.context.problems

    @classmethod
    def start(
        cls, objects: list[Raw], now: float = 0.0, scheduler_name: str = names.SCHEDULER_NAME
    ) -> "WorkloadControllers":
        owned = {
            (ref["kind"], obj["metadata"].get("namespace"), ref["name"]) for obj in objects for ref in owner_refs(obj)
        }
        context = Context(taken={(obj["kind"], object_key(obj)) for obj in objects}, scheduler_name=scheduler_name)
        jobs = JobStandIn(context)
        controllers = cls([], context, jobs, CronJobStandIn(context, jobs, now), RayJobStandIn(context, jobs))
        inputs = link_owners(objects, MAKERS)  # with the uids the API server sets: reads later set none
        controllers.objects = controllers._expand(inputs, owned)
        pods = [obj for obj in inputs if obj["kind"] == "Pod"]
        for job in inputs:
            if job["kind"] == "Job" and ("Job", job["metadata"].get("namespace"), job["metadata"]["name"]) in owned:
                jobs.adopt(job, [pod for pod in pods if owned_by(pod, job)])
        return controllers

    def _expand(self, objects: list[Raw], owned: set[tuple[Any, Any, Any]]) -> list[Raw]:
        """``objects`` and all their controllers make of them, now; what they make later goes to ``after_running``."""
        expanded: list[Raw] = []
        pending = deque(objects)
        while pending:
            obj = pending.popleft()
            expanded.append(obj)
            kind, meta = obj["kind"], obj["metadata"]
            if kind in ("Pod", "PodGroup") or (
                (kind, meta.get("namespace"), meta["name"]) in owned and kind != "CronJob"
            ):
                continue  # a CronJob that owns Jobs goes on making them
            maker = MAKERS.get(kind) if api_group(obj) == API_GROUPS.get(kind) else None
            if maker is None:
                if kind in GROUPED_KINDS:
                    self.context.report(WARNING, obj, "kind", _not_made(obj))
                continue
            try:
                made = maker(obj)
            except Invalid as error:
                made_of_it = "Jobs" if kind == "CronJob" else "pods"
                self.context.report(ERROR, obj, error.field, f"{error.problem}; no {made_of_it} are made from it")
                continue
            admitted = []
            for item in made:
                if isinstance(item, AfterRunning):
                    later = [one for one in item.objects if self.context.admit(one, obj)]
                    self.after_running.append(AfterRunning(item.pods, self._expand(later, owned), item.starts))
                elif isinstance(item, CronJobSpec):
                    self.cron_jobs.specs[object_key(obj)] = item
                    self.jobs.unread_fields(obj, "spec", "jobTemplate", "spec")
                elif self.context.admit(item, obj):
                    admitted.append(item)
            if kind == "Job":
                admitted = self.jobs.first_pods(obj)
            elif kind == "RayJob":
                made_later = [o for item in self.after_running for o in item.objects if owned_by(o, obj)]
                self.ray_jobs.submitter(obj, made_later)
            pending.extend(admitted)
        return expanded

    def step(self, cluster: MemoryCluster, now: float) -> None:
        """What waited for pods to run is made once they all run; then each stand-in takes its turn: Jobs make their
        next pods, RayJobs whose submitter is done end, CronJobs make the Jobs their schedule asks for by ``now``;
        first, suspended workloads lose their pods and resumed ones get them back."""
        self.suspensions.step(cluster)
        waiting = []
        for item in self.after_running:
            if all(
                ((cluster.peek("Pod", pod) or {}).get("status") or {}).get("phase") == "Running" for pod in item.pods
            ):
                for obj in item.objects:
                    if obj["kind"] == "Pod":
                        self.jobs.run_unplaced(obj, owner_key(obj, "Job"), now)
                    create_new(cluster, obj)
                if item.starts:
                    self.ray_jobs.sidecar_starts[item.starts] = now
            else:
                waiting.append(item)
        self.after_running = waiting
        if self.jobs.jobs:
            self.jobs.step(cluster, now)
        if self.ray_jobs.ray_jobs or self.ray_jobs.sidecars:
            self.ray_jobs.step(cluster, now)
        if self.cron_jobs.specs:
            self.run_cron_jobs(cluster, now)

    def run_cron_jobs(self, cluster: MemoryCluster, now: float) -> None:
        """Each CronJob's pass at ``now`` (``cron_job``); the Jobs it makes are expanded here, as any workload."""
        self.cron_jobs.run(cluster, now, self._expand)

    def later_pods(self) -> list[Raw]:
        """Pods made only later (once a pod runs, a Job's pod ends, or a CronJob's time comes), as their templates give
        them."""
        pods = [obj for item in self.after_running for obj in item.objects if obj["kind"] == "Pod"]
        return pods + self.jobs.later_pods(self.objects) + self.cron_jobs.later_pods(self.objects)


def _not_made(obj: Raw) -> str:
    return (
        f"kai simulate does not run the {obj['kind']} controller, so no pods are made from it; put its pods in "
        f"the input (owned by it) to simulate them. kai simulate makes the pods of: {EXPANDED}"
    )

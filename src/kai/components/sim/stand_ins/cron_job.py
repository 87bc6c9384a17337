"""The CronJob controller's stand-in: at each step each CronJob makes the Job its schedule asks for by then (made
with its pods, as any Job), deletes the Jobs its history limits let go (with their pods and PodGroups) and writes its
status. What a pass decides is ``cron_jobs.sync``'s."""

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from kai.cluster.memory import MemoryCluster
from kai.cluster.port import Raw
from kai.components.sim.cron_jobs import CronJobSpec, sync
from kai.components.sim.stand_ins.context import Context, create_new, delete
from kai.components.sim.stand_ins.job import JobStandIn
from kai.components.sim.workload_objects import mapping, owner_refs, template_meta, uid
from kai.core.state.cluster_state import object_key

Expand = Callable[[list[Raw], set[tuple[Any, Any, Any]]], list[Raw]]
"""Objects and all their controllers make of them now (``dispatch``), given the (kind, namespace, name) of the
workloads that already own objects."""


@dataclass
class CronJobStandIn:
    context: Context
    jobs: JobStandIn
    start_time: float = 0.0
    """When the simulation starts: the creation of a CronJob that gives none."""
    specs: dict[str, CronJobSpec] = field(default_factory=dict)
    """Per CronJob (key), what its controller reads of it."""

    def run(self, cluster: MemoryCluster, now: float, expand: Expand) -> None:
        """Each CronJob's pass at ``now`` (``cron_jobs.sync``): the Jobs it makes are made with their pods, the ones
        it deletes go with their pods and PodGroups, its status is written."""
        owned: dict[str, list[Raw]] = {}
        for job in cluster.view("Job"):
            for ref in owner_refs(job):
                if ref["kind"] == "CronJob" and ref.get("controller"):
                    owned.setdefault(str(ref.get("uid")), []).append(job)
        for key, spec in self.specs.items():
            cron_job = cluster.get("CronJob", key)
            if cron_job is None or cron_job["metadata"].get("deletionTimestamp"):
                continue
            decided = sync(cron_job, spec, owned.get(uid(cron_job), []), now, self.start_time)
            for job in decided.remove:
                delete(cluster, job, self.jobs.forget(job))
            if decided.job is not None and self.context.admit(decided.job, cron_job):
                decided.made()
                for obj in expand([decided.job], set()):
                    create_new(cluster, obj)
            if decided.status != (cron_job.get("status") or {}):
                cron_job["status"] = decided.status
                cluster.update_status("CronJob", cron_job)

    def later_pods(self, objects: list[Raw]) -> list[Raw]:
        """The pods of the Jobs the CronJobs make later, as their job templates give them."""
        pods = []
        for key in self.specs:
            cron_job = next(obj for obj in objects if obj["kind"] == "CronJob" and object_key(obj) == key)
            template = mapping(cron_job, "spec", "jobTemplate", "spec", "template")
            pods.append({"kind": "Pod", "metadata": {"annotations": template_meta(template, "annotations")}})
        return pods

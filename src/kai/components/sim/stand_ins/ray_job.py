"""KubeRay's RayJob stand-in: a RayJob's submitter Job is taken as KAI would schedule it (``ray_submitter``), and
the RayJob ends when its submitter does, or (SidecarMode) its run time after its Ray job started; with
``shutdownAfterJobFinishes`` its RayCluster goes ``ttlSecondsAfterFinished`` later."""

from dataclasses import dataclass, field

from kai.cluster.memory import MemoryCluster
from kai.cluster.port import Raw
from kai.components.sim.cron_jobs import finished
from kai.components.sim.problems import WARNING
from kai.components.sim.ray_submitter import sidecar_run_time, submission_mode
from kai.components.sim.stand_ins.context import Context, delete
from kai.components.sim.stand_ins.job import JobStandIn
from kai.components.sim.workload_objects import Invalid, mapping
from kai.core.model.meta import format_time, parse_time
from kai.core.state.cluster_state import object_key


@dataclass
class RayJobStandIn:
    context: Context
    jobs: JobStandIn
    ray_jobs: dict[str, str] = field(default_factory=dict)
    """Per RayJob (key) with a submitter Job, that Job's key (the RayJob ends when it does)."""
    sidecars: dict[str, float] = field(default_factory=dict)
    """Per SidecarMode RayJob (key) with a run time, that run time (its Ray job runs so long from its start)."""
    sidecar_starts: dict[str, float] = field(default_factory=dict)
    """When the Ray job of a SidecarMode RayJob started: once every pod of its cluster ran."""

    def submitter(self, ray_job: Raw, made: list[Raw]) -> None:
        """Which scheduler a RayJob's submitter pod is for, and what kai simulate does of it (``ray_submitter``); in
        SidecarMode, how long its Ray job runs (its run-time annotation)."""
        spec = mapping(ray_job, "spec")
        if spec.get("clusterSelector"):
            problem = "kai simulate makes no RayCluster and no submitter for a RayJob that selects an existing cluster"
            self.context.report(WARNING, ray_job, "spec.clusterSelector", problem)
        elif submission_mode(ray_job) == "SidecarMode":
            try:
                run_time = sidecar_run_time(ray_job)
            except Invalid as error:
                self.context.report(WARNING, ray_job, error.field, f"{error.problem}; its Ray job runs until the end")
                return
            if run_time is not None:
                self.sidecars[object_key(ray_job)] = run_time
        job = next((obj for obj in made if obj["kind"] == "Job"), None)
        if job is None:
            return
        self.ray_jobs[object_key(ray_job)] = object_key(job)
        scheduler = job["spec"]["template"]["spec"].get("schedulerName") or "default-scheduler"
        if scheduler == self.context.scheduler_name:
            problem = (
                f"is {scheduler}: KAI's pod-grouper puts the submitter pod in the RayJob's PodGroup without a "
                "sub-group, so KAI never schedules it and the RayJob never ends (KubeRay v1.6's KAI integration "
                "refuses K8sJobMode for this reason); leave it to the default scheduler, or use submissionMode: "
                "HTTPMode or SidecarMode"
            )
            self.context.report(WARNING, ray_job, "spec.submitterPodTemplate.spec.schedulerName", problem)
            return
        self.jobs.unplaced.add(object_key(job))
        problem = (
            f"the submitter pod is for {scheduler}, not {self.context.scheduler_name}: kai simulate runs it once the "
            "RayCluster runs, on no node (its requests take no node's resources)"
        )
        self.context.report(WARNING, ray_job, "spec.submitterPodTemplate", problem)

    def step(self, cluster: MemoryCluster, now: float) -> None:
        """A RayJob is Complete when its submitter Job is, or (SidecarMode) its run time after its Ray job started,
        and Failed (SubmissionFailed) when its submitter Job failed; with ``shutdownAfterJobFinishes`` its RayCluster
        (and its pods) is deleted ``ttlSecondsAfterFinished`` later."""
        for key in [*self.ray_jobs, *self.sidecars]:
            ray_job = cluster.get("RayJob", key)
            end = self._end(cluster, key, now)
            if ray_job is None or end is None:
                continue
            ended, outcome = end
            status = ray_job.setdefault("status", {})
            if status.get("jobDeploymentStatus") not in ("Complete", "Failed"):
                status.update({"jobDeploymentStatus": outcome, "endTime": ended})
                if outcome == "Failed":
                    status.update({"jobStatus": "FAILED", "reason": "SubmissionFailed"})
                else:
                    status["jobStatus"] = "SUCCEEDED"
                cluster.update_status("RayJob", ray_job)
            spec = mapping(ray_job, "spec")
            if spec.get("shutdownAfterJobFinishes") is True:
                ended_at = parse_time(status["endTime"], f"RayJob {key}", "status.endTime")
                if now < ended_at + int(spec.get("ttlSecondsAfterFinished") or 0):
                    continue
                namespace = ray_job["metadata"]["namespace"]
                ray_cluster = cluster.get("RayCluster", f"{namespace}/{status['rayClusterName']}")
                if ray_cluster is not None:
                    delete(cluster, ray_cluster)
            self.ray_jobs.pop(key, None)
            self.sidecars.pop(key, None)

    def _end(self, cluster: MemoryCluster, key: str, now: float) -> tuple[str, str] | None:
        """When the RayJob's Ray job ended and how (``Complete``, or ``Failed`` with its submitter Job); None while it
        runs."""
        if key in self.ray_jobs:
            job = cluster.peek("Job", self.ray_jobs[key])
            outcome = None if job is None else finished(job)
            if job is None or outcome is None:
                return None
            status = job.get("status") or {}
            ended = status.get("completionTime") or next(
                (c.get("lastTransitionTime") for c in status.get("conditions") or [] if c.get("type") == outcome), None
            )
            return str(ended or format_time(now)), outcome
        started = self.sidecar_starts.get(key)
        if started is None or now < started + self.sidecars[key]:
            return None
        return format_time(started + self.sidecars[key]), "Complete"

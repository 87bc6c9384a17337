"""The Job controller's stand-in: a Job makes its next pods as earlier ones succeed, up to its completions, and is
Complete then; a failed pod is made again after the Kubernetes back-off until more than ``backoffLimit`` failed, and
the Job is Failed then (BackoffLimitExceeded). A suspended Job makes nothing (its pods are ``suspension``'s). A Job
of the input that owns pods (a cluster's capture) goes on from them, counting what its status says of pods no
longer there."""

from dataclasses import dataclass, field

from kai.cluster.memory import MemoryCluster, json_copy
from kai.cluster.port import Raw
from kai.components.sim.cron_jobs import finished
from kai.components.sim.problems import ERROR, WARNING
from kai.components.sim.stand_ins.context import Context, create_new, owner_key
from kai.components.sim.workload_makers import (
    backoff_delay,
    completed_indexes,
    completion_index,
    counted_failures,
    counted_successes,
    job_pods,
    pods_to_make,
)
from kai.components.sim.workload_objects import (
    DEFAULT_BACKOFF_LIMIT,
    Invalid,
    check_job_spec,
    mapping,
    template_meta,
    whole_number,
)
from kai.core.model.meta import format_time
from kai.core.state.cluster_state import object_key

UNREAD_JOB_FIELDS = ("podFailurePolicy", "backoffLimitPerIndex", "activeDeadlineSeconds", "successPolicy")
"""Job fields that decide when pods or the Job fail, which the Job stand-in does not apply (a warning says so)."""


@dataclass
class JobStandIn:
    context: Context
    jobs: dict[str, list[str]] = field(default_factory=dict)
    """Per Job whose pods are made here, the keys of the pods made so far (its later pods are made by ``step``)."""
    unplaced: set[str] = field(default_factory=set)
    """Jobs whose pods another scheduler places: they run as soon as they are made, on no node."""
    complete: set[str] = field(default_factory=set)
    """Jobs of ``jobs`` that are done (no more pods to make or to look at)."""
    counted: dict[str, int] = field(default_factory=dict)
    """Per captured Job, the successes its status counts of pods no longer in the input (Kubernetes' Job
    controller keeps counting a pod that succeeded after it is gone)."""
    completed: dict[str, frozenset[int]] = field(default_factory=dict)
    """Per captured Indexed Job, the indexes its status counts as done (``status.completedIndexes``)."""
    ended: dict[str, tuple[str, float]] = field(default_factory=dict)
    """Per pod of a Job (key) that ended, how (``Succeeded``, ``Failed``) and when the Job stand-in saw it: a
    failure starts the Job's back-off."""
    counted_failures: dict[str, int] = field(default_factory=dict)
    """Per captured Job, the failures its status counts of pods no longer in the input (``status.failed``)."""

    def adopt(self, job: Raw, pods: list[Raw]) -> None:
        """A Job of the input that owns pods goes on from them (``_follow``) if its spec can be read, as the Job
        maker reads a Job that owns none; else it is an error and its pods run as they are."""
        try:
            check_job_spec(job, "spec")
        except Invalid as error:
            problem = f"{error.problem}; no more pods are made from it (its pods in the input run as they are)"
            self.context.report(ERROR, job, error.field, problem)
            return
        self._follow(job, pods)

    def _follow(self, job: Raw, pods: list[Raw]) -> None:
        """A Job goes on from its pods as its controller would: it makes more if its completions ask for them and is
        Complete once they are done. A captured Job's status may count successes of pods no longer there: an Indexed
        Job's ``completedIndexes`` (the controller counts those, and makes no pod of them again), another's
        ``succeeded``."""
        key = object_key(job)
        self.jobs[key] = [object_key(pod) for pod in pods]
        if not owner_key(job, "CronJob"):  # a CronJob's Jobs: said once, of its jobTemplate
            self.unread_fields(job, "spec")
        succeeded = [pod for pod in pods if (pod.get("status") or {}).get("phase") == "Succeeded"]
        try:
            done = completed_indexes(job)
        except Invalid as error:
            done = frozenset()
            self.context.report(WARNING, job, error.field, f"{error.problem}; no index is taken as done")
        if done:
            self.completed[key] = done
            gone = len(done - {completion_index(pod) for pod in succeeded})
        else:
            gone = counted_successes(job) - len(succeeded)
        if gone > 0:
            self.counted[key] = gone
        failed = sum(1 for pod in pods if (pod.get("status") or {}).get("phase") == "Failed")
        if (gone_failed := counted_failures(job) - failed) > 0:
            self.counted_failures[key] = gone_failed
        if finished(job) is not None:
            self.complete.add(key)

    def first_pods(self, job: Raw) -> list[Raw]:
        """The pods a Job has at the start: none once it finished (a cluster's capture), fewer when its status counts
        successes (an Indexed Job's of the indexes it does not count as done)."""
        self._follow(job, [])
        key = object_key(job)
        if key in self.complete:
            return []
        count = pods_to_make(job, self.counted.get(key, 0), 0)
        if self.counted_failures.get(key, 0) > whole_number(job, ("spec", "backoffLimit"), DEFAULT_BACKOFF_LIMIT):
            count = 0  # captured past its backoffLimit: it fails at the first step
        completed = self.completed.get(key, frozenset())
        made = [pod for pod in job_pods(job, 0, count, completed) if self.context.admit(pod, job)]
        self.jobs[key] = [object_key(pod) for pod in made]
        return made

    def forget(self, job: Raw) -> list[str] | None:
        """A Job deleted (by its CronJob): nothing more is made of it; the keys of the pods made of it, if any."""
        key = object_key(job)
        self.complete.discard(key)
        self.counted.pop(key, None)
        self.completed.pop(key, None)
        self.counted_failures.pop(key, None)
        return self.jobs.pop(key, None)

    def step(self, cluster: MemoryCluster, now: float) -> None:
        """Each Job makes its next pods as earlier ones succeed (as many run as its parallelism allows, until as many
        have succeeded as its completions ask), after its back-off once a pod failed."""
        for key, made in self.jobs.items():
            job = None if key in self.complete else cluster.peek("Job", key)
            if job is None or (job.get("spec") or {}).get("suspend") is True:
                continue  # a suspended Job makes nothing (``suspension`` keeps its pods)
            pods = {one: pod for one in made if (pod := cluster.peek("Pod", one))}
            for one in made:
                self._note_end(one, pods.get(one), now)
            ends = [self.ended.get(one) for one in made]
            succeeded = sum(1 for end in ends if end and end[0] == "Succeeded") + self.counted.get(key, 0)
            failed_at = {one: end[1] for one, end in zip(made, ends, strict=True) if end and end[0] == "Failed"}
            failed = len(failed_at) + self.counted_failures.get(key, 0)
            active = sum(1 for end in ends if end is None)
            if failed > whole_number(job, ("spec", "backoffLimit"), DEFAULT_BACKOFF_LIMIT):
                self._fail(cluster, job, made, succeeded, failed, now)
                continue
            busy = self.completed.get(key, frozenset()) | frozenset(
                index
                for one, pod in pods.items()
                if one not in failed_at and (index := completion_index(pod)) is not None
            )
            backing_off = bool(failed_at) and now < max(failed_at.values()) + backoff_delay(failed)
            for pod in job_pods(job, len(made), 0 if backing_off else pods_to_make(job, succeeded, active), busy):
                self.run_unplaced(pod, key, now)
                if create_new(cluster, pod):
                    made.append(object_key(pod))
            done = succeeded >= whole_number(job, ("spec", "completions"), 1) and not active
            if done and not (job.get("status") or {}).get("completionTime"):
                complete = {"type": "Complete", "status": "True", "lastTransitionTime": format_time(now)}
                job = json_copy(job)
                job["status"] = {"succeeded": succeeded, "completionTime": format_time(now), "conditions": [complete]}
                if failed:
                    job["status"]["failed"] = failed
                cluster.update_status("Job", job)
            if done:
                self.complete.add(key)

    def run_unplaced(self, pod: Raw, job_key: str, now: float) -> None:
        """A pod of a Job another scheduler places runs as soon as it is made, on no node."""
        if job_key in self.unplaced:
            pod["status"] = {"phase": "Running", "startTime": format_time(now)}

    def _note_end(self, key: str, pod: Raw | None, now: float) -> None:
        """When and how a Job's pod ended, once: by its phase, or Failed when it is deleted before it succeeded (an
        eviction, too), as Kubernetes' Job controller counts a deleted pod."""
        if key in self.ended:
            return
        phase = ((pod or {}).get("status") or {}).get("phase")
        if phase in ("Succeeded", "Failed"):
            self.ended[key] = (phase, now)
        elif pod is None or pod["metadata"].get("deletionTimestamp"):
            self.ended[key] = ("Failed", now)

    def _fail(self, cluster: MemoryCluster, job: Raw, made: list[str], succeeded: int, failed: int, now: float) -> None:
        """A Job past its ``backoffLimit`` ends as the Job controller ends it: ``Failed`` (BackoffLimitExceeded), its
        pods still running or waiting deleted (and counted as failed; the finished ones stay)."""
        for key in made:
            if key not in self.ended:
                cluster.finalize("Pod", key)
                self.ended[key] = ("Failed", now)
                failed += 1
        failure = {
            "type": "Failed",
            "status": "True",
            "reason": "BackoffLimitExceeded",
            "message": "Job has reached the specified backoff limit",
            "lastTransitionTime": format_time(now),
        }
        job = json_copy(job)
        job["status"] = {"succeeded": succeeded, "failed": failed, "conditions": [failure]}
        cluster.update_status("Job", job)
        self.complete.add(object_key(job))

    def later_pods(self, objects: list[Raw]) -> list[Raw]:
        """The pods the Jobs of ``objects`` make later, as their templates give them."""
        pods = []
        for obj in objects:
            if obj["kind"] == "Job" and object_key(obj) in self.jobs:
                template = mapping(obj, "spec", "template")
                pods.append({"kind": "Pod", "metadata": {"annotations": template_meta(template, "annotations")}})
        return pods

    def unread_fields(self, obj: Raw, *path: str) -> None:
        """A warning for the first field of the Job spec at ``path`` that decides when pods or the Job fail, which the
        Job stand-in does not apply."""
        spec = mapping(obj, *path)
        for name in UNREAD_JOB_FIELDS:
            if spec.get(name) is not None:
                problem = "kai simulate does not apply it: pods fail by their fail-after, and a Job by its backoffLimit"
                self.context.report(WARNING, obj, ".".join((*path, name)), problem)
                return

"""The workload controllers ``kai simulate`` stands in for: what Kubernetes' Job, ReplicaSet, Deployment and
StatefulSet controllers, KubeRay, the Kubeflow training operator and the LeaderWorkerSet and JobSet controllers make
from a workload's templates (scenario-format.md §9).

Without them a manifest of a RayCluster or a PyTorchJob would simulate nothing: on a cluster it is its operator that
makes the pods, and the pod-grouper that turns them into the gang. Here the pods (and the objects between, such as
a Deployment's ReplicaSet or a RayJob's RayCluster) are made as those controllers name and label them, owned by the
workload, so that the real pod-grouper groups them as it would on a cluster. Names are deterministic, so a run can
be repeated. A workload that already owns objects in the input (a cluster's capture) is taken as it stands (a
captured Job and CronJob go on from there). A Job
makes its next pods as earlier ones succeed, up to its completions, and is Complete then; what waits for pods to
run is made once they do (a LeaderReady LWS group's workers, a WaitForWorkersReady MPIJob's launcher, a RayJob's
submitter, which ends the RayJob: ``ray_submitter``); a CronJob makes its Jobs as the clock passes its schedule
(``cron_jobs``).
A workload kind the pod-grouper knows but no stand-in makes pods for is reported (its pods must be in the input).
What each controller makes is ``workload_makers``'s.
"""

from collections import deque
from dataclasses import dataclass, field
from typing import Any

from kai.cluster.memory import MemoryCluster, json_copy
from kai.cluster.port import Raw
from kai.components.sim.cron_jobs import CronJobSpec, finished, sync
from kai.components.sim.problems import ERROR, WARNING, Problem
from kai.components.sim.ray_submitter import sidecar_run_time, submission_mode
from kai.components.sim.workload_makers import (
    API_GROUPS,
    EXPANDED,
    GROUPED_KINDS,
    MAKERS,
    AfterRunning,
    api_group,
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
    controller_ref,
    link_owners,
    mapping,
    owner_refs,
    template_meta,
    uid,
    whole_number,
)
from kai.core.model import names
from kai.core.model.errors import InvalidObject
from kai.core.model.meta import format_time, parse_time
from kai.core.state.cluster_state import object_key

UNREAD_JOB_FIELDS = ("podFailurePolicy", "backoffLimitPerIndex", "activeDeadlineSeconds", "successPolicy")
"""Job fields that decide when pods or the Job fail, which the Job stand-in does not apply (a warning says so)."""


@dataclass
class WorkloadControllers:
    """Made at a simulation's start from its input: ``objects`` is the input and all that the stand-ins made."""

    objects: list[Raw]
    problems: list[Problem] = field(default_factory=list)
    jobs: dict[str, list[str]] = field(default_factory=dict)
    """Per Job whose pods are made here, the keys of the pods made so far (its later pods are made by ``step``)."""
    after_running: list[AfterRunning] = field(default_factory=list)
    """What is made once a pod runs (``step``)."""
    taken: set[tuple[str, str]] = field(default_factory=set)
    """(kind, key) of every object of the input and made so far: a made object never takes a name twice."""
    cron_jobs: dict[str, CronJobSpec] = field(default_factory=dict)
    """Per CronJob (key), what its controller reads of it."""
    start_time: float = 0.0
    """When the simulation starts: the creation of a CronJob that gives none."""
    scheduler_name: str = names.SCHEDULER_NAME
    ray_jobs: dict[str, str] = field(default_factory=dict)
    """Per RayJob (key) with a submitter Job, that Job's key (the RayJob ends when it does)."""
    sidecars: dict[str, float] = field(default_factory=dict)
    """Per SidecarMode RayJob (key) with a run time, that run time (its Ray job runs so long from its start)."""
    sidecar_starts: dict[str, float] = field(default_factory=dict)
    """When the Ray job of a SidecarMode RayJob started: once every pod of its cluster ran."""
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

    @classmethod
    def start(
        cls, objects: list[Raw], now: float = 0.0, scheduler_name: str = names.SCHEDULER_NAME
    ) -> "WorkloadControllers":
        owned = {
            (ref["kind"], obj["metadata"].get("namespace"), ref["name"]) for obj in objects for ref in owner_refs(obj)
        }
        taken = {(obj["kind"], object_key(obj)) for obj in objects}
        controllers = cls([], taken=taken, start_time=now, scheduler_name=scheduler_name)
        inputs = link_owners(objects, MAKERS)  # with the uids the API server sets: reads later set none
        controllers.objects = controllers._expand(inputs, owned)
        pods = [obj for obj in inputs if obj["kind"] == "Pod"]
        for job in inputs:
            if job["kind"] == "Job" and ("Job", job["metadata"].get("namespace"), job["metadata"]["name"]) in owned:
                controllers._adopt(job, [pod for pod in pods if _owned_by(pod, job)])
        return controllers

    def _adopt(self, job: Raw, pods: list[Raw]) -> None:
        """A Job of the input that owns pods goes on from them (``_follow``) if its spec can be read, as the Job
        maker reads a Job that owns none; else it is an error and its pods run as they are."""
        try:
            check_job_spec(job, "spec")
        except Invalid as error:
            problem = f"{error.problem}; no more pods are made from it (its pods in the input run as they are)"
            self._report(ERROR, job, error.field, problem)
            return
        self._follow(job, pods)

    def _follow(self, job: Raw, pods: list[Raw]) -> None:
        """A Job goes on from its pods as its controller would: it makes more if its completions ask for them and is
        Complete once they are done. A captured Job's status may count successes of pods no longer there: an Indexed
        Job's ``completedIndexes`` (the controller counts those, and makes no pod of them again), another's
        ``succeeded``."""
        key = object_key(job)
        self.jobs[key] = [object_key(pod) for pod in pods]
        if not _owner_key(job, "CronJob"):  # a CronJob's Jobs: said once, of its jobTemplate
            self._unread_job_fields(job, "spec")
        succeeded = [pod for pod in pods if (pod.get("status") or {}).get("phase") == "Succeeded"]
        try:
            done = completed_indexes(job)
        except Invalid as error:
            done = frozenset()
            self._report(WARNING, job, error.field, f"{error.problem}; no index is taken as done")
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

    def _first_pods(self, job: Raw) -> list[Raw]:
        """The pods a Job has at the start: none once it finished (a cluster's capture), fewer when its status counts
        successes (an Indexed Job's of the indexes it does not count as done)."""
        self._follow(job, [])
        key = object_key(job)
        if key in self.complete:
            return []
        count = pods_to_make(job, self.counted.get(key, 0), 0)
        if self.counted_failures.get(key, 0) > whole_number(job, ("spec", "backoffLimit"), DEFAULT_BACKOFF_LIMIT):
            count = 0  # captured past its backoffLimit: it fails at the first step
        made = [pod for pod in job_pods(job, 0, count, self.completed.get(key, frozenset())) if self._admit(pod, job)]
        self.jobs[key] = [object_key(pod) for pod in made]
        return made

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
                    self._report(WARNING, obj, "kind", self._not_made(obj))
                continue
            try:
                made = maker(obj)
            except Invalid as error:
                made_of_it = "Jobs" if kind == "CronJob" else "pods"
                self._report(ERROR, obj, error.field, f"{error.problem}; no {made_of_it} are made from it")
                continue
            admitted = []
            for item in made:
                if isinstance(item, AfterRunning):
                    later = [one for one in item.objects if self._admit(one, obj)]
                    self.after_running.append(AfterRunning(item.pods, self._expand(later, owned), item.starts))
                elif isinstance(item, CronJobSpec):
                    self.cron_jobs[object_key(obj)] = item
                    self._unread_job_fields(obj, "spec", "jobTemplate", "spec")
                elif self._admit(item, obj):
                    admitted.append(item)
            if kind == "Job":
                admitted = self._first_pods(obj)
            elif kind == "RayJob":
                self._submitter(obj, [o for item in self.after_running for o in item.objects if _owned_by(o, obj)])
            pending.extend(admitted)
        return expanded

    def _admit(self, made: Raw, workload: Raw) -> bool:
        """Whether ``made`` has a name of its own; a name the input (or an earlier workload) took is reported."""
        key = (made["kind"], object_key(made))
        if key not in self.taken:
            self.taken.add(key)
            return True
        problem = f"would make {made['kind']} {key[1]}, which already exists; it is not made (rename one of the two)"
        self._report(WARNING, workload, "metadata.name", problem)
        return False

    def step(self, cluster: MemoryCluster, now: float) -> None:
        """What waited for pods to run is made once they all run; a Job makes its next pods as earlier ones succeed (as
        many run as its parallelism allows, until as many have succeeded as its completions ask); RayJobs whose
        submitter is done end; CronJobs make the Jobs their schedule asks for by ``now``."""
        waiting = []
        for item in self.after_running:
            if all(
                ((cluster.peek("Pod", pod) or {}).get("status") or {}).get("phase") == "Running" for pod in item.pods
            ):
                for obj in item.objects:
                    if obj["kind"] == "Pod":
                        self._run_unplaced(obj, _owner_key(obj, "Job"), now)
                    _create_new(cluster, obj)
                if item.starts:
                    self.sidecar_starts[item.starts] = now
            else:
                waiting.append(item)
        self.after_running = waiting
        if self.jobs:
            self._step_jobs(cluster, now)
        if self.ray_jobs or self.sidecars:
            self._step_ray_jobs(cluster, now)
        if self.cron_jobs:
            self.run_cron_jobs(cluster, now)

    def _step_jobs(self, cluster: MemoryCluster, now: float) -> None:
        for key, made in self.jobs.items():
            job = None if key in self.complete else cluster.peek("Job", key)
            if job is None:
                continue
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
                self._run_unplaced(pod, key, now)
                if _create_new(cluster, pod):
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

    def _run_unplaced(self, pod: Raw, job_key: str, now: float) -> None:
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

    def run_cron_jobs(self, cluster: MemoryCluster, now: float) -> None:
        """Each CronJob's pass at ``now`` (``cron_jobs.sync``): the Jobs it makes are made with their pods, the ones
        it deletes go with their pods and PodGroups, its status is written."""
        owned: dict[str, list[Raw]] = {}
        for job in cluster.view("Job"):
            for ref in owner_refs(job):
                if ref["kind"] == "CronJob" and ref.get("controller"):
                    owned.setdefault(str(ref.get("uid")), []).append(job)
        for key, spec in self.cron_jobs.items():
            cron_job = cluster.get("CronJob", key)
            if cron_job is None or cron_job["metadata"].get("deletionTimestamp"):
                continue
            decided = sync(cron_job, spec, owned.get(uid(cron_job), []), now, self.start_time)
            for job in decided.remove:
                self.complete.discard(object_key(job))
                self.counted.pop(object_key(job), None)
                self.completed.pop(object_key(job), None)
                self.counted_failures.pop(object_key(job), None)
                self._delete(cluster, job, self.jobs.pop(object_key(job), None))
            if decided.job is not None and self._admit(decided.job, cron_job):
                decided.made()
                for obj in self._expand([decided.job], set()):
                    _create_new(cluster, obj)
            if decided.status != (cron_job.get("status") or {}):
                cron_job["status"] = decided.status
                cluster.update_status("CronJob", cron_job)

    def _delete(self, cluster: MemoryCluster, owner: Raw, pods: list[str] | None = None) -> None:
        """An object gone (a Job, a RayCluster), with its pods and the PodGroups of theirs it owns, as the garbage
        collector would (at once: no termination grace period). ``pods``: its pods' keys when known (else every pod
        of the cluster is looked at)."""
        if pods is None:
            pods = [object_key(pod) for pod in cluster.list("Pod") if _owned_by(pod, owner)]
        podgroups = set()
        for key in pods:
            pod = cluster.peek("Pod", key)
            if pod is None:
                continue
            group = (pod["metadata"].get("annotations") or {}).get(names.POD_GROUP_ANNOTATION)
            if group:
                podgroups.add(f"{pod['metadata'].get('namespace')}/{group}")
            cluster.finalize("Pod", key)
        for key in sorted(podgroups):
            podgroup = cluster.peek("PodGroup", key)
            if podgroup is not None and _owned_by(podgroup, owner):
                cluster.finalize("PodGroup", key)
        cluster.finalize(owner["kind"], object_key(owner))

    def _submitter(self, ray_job: Raw, made: list[Raw]) -> None:
        """Which scheduler a RayJob's submitter pod is for, and what kai simulate does of it (``ray_submitter``); in
        SidecarMode, how long its Ray job runs (its run-time annotation)."""
        spec = mapping(ray_job, "spec")
        if spec.get("clusterSelector"):
            problem = "kai simulate makes no RayCluster and no submitter for a RayJob that selects an existing cluster"
            self._report(WARNING, ray_job, "spec.clusterSelector", problem)
        elif submission_mode(ray_job) == "SidecarMode":
            try:
                run_time = sidecar_run_time(ray_job)
            except Invalid as error:
                self._report(WARNING, ray_job, error.field, f"{error.problem}; its Ray job runs until the end")
                return
            if run_time is not None:
                self.sidecars[object_key(ray_job)] = run_time
        job = next((obj for obj in made if obj["kind"] == "Job"), None)
        if job is None:
            return
        self.ray_jobs[object_key(ray_job)] = object_key(job)
        scheduler = job["spec"]["template"]["spec"].get("schedulerName") or "default-scheduler"
        if scheduler == self.scheduler_name:
            problem = (
                f"is {scheduler}: KAI's pod-grouper puts the submitter pod in the RayJob's PodGroup without a "
                "sub-group, so KAI never schedules it and the RayJob never ends (KubeRay v1.6's KAI integration "
                "refuses K8sJobMode for this reason); leave it to the default scheduler, or use submissionMode: "
                "HTTPMode or SidecarMode"
            )
            self._report(WARNING, ray_job, "spec.submitterPodTemplate.spec.schedulerName", problem)
            return
        self.unplaced.add(object_key(job))
        problem = (
            f"the submitter pod is for {scheduler}, not {self.scheduler_name}: kai simulate runs it once the "
            "RayCluster runs, on no node (its requests take no node's resources)"
        )
        self._report(WARNING, ray_job, "spec.submitterPodTemplate", problem)

    def _step_ray_jobs(self, cluster: MemoryCluster, now: float) -> None:
        """A RayJob is Complete when its submitter Job is, or (SidecarMode) its run time after its Ray job started,
        and Failed (SubmissionFailed) when its submitter Job failed; with ``shutdownAfterJobFinishes`` its RayCluster
        (and its pods) is deleted ``ttlSecondsAfterFinished`` later."""
        for key in [*self.ray_jobs, *self.sidecars]:
            ray_job = cluster.get("RayJob", key)
            end = self._ray_job_end(cluster, key, now)
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
                    self._delete(cluster, ray_cluster)
            self.ray_jobs.pop(key, None)
            self.sidecars.pop(key, None)

    def _ray_job_end(self, cluster: MemoryCluster, key: str, now: float) -> tuple[str, str] | None:
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

    def later_pods(self) -> list[Raw]:
        """Pods made only later (once a pod runs, a Job's pod ends, or a CronJob's time comes), as their templates give
        them."""
        pods = [obj for item in self.after_running for obj in item.objects if obj["kind"] == "Pod"]
        for obj in self.objects:
            if obj["kind"] == "Job" and object_key(obj) in self.jobs:
                template = mapping(obj, "spec", "template")
                pods.append({"kind": "Pod", "metadata": {"annotations": template_meta(template, "annotations")}})
        for key in self.cron_jobs:
            cron_job = next(obj for obj in self.objects if obj["kind"] == "CronJob" and object_key(obj) == key)
            template = mapping(cron_job, "spec", "jobTemplate", "spec", "template")
            pods.append({"kind": "Pod", "metadata": {"annotations": template_meta(template, "annotations")}})
        return pods

    def _not_made(self, obj: Raw) -> str:
        return (
            f"kai simulate does not run the {obj['kind']} controller, so no pods are made from it; put its pods in "
            f"the input (owned by it) to simulate them. kai simulate makes the pods of: {EXPANDED}"
        )

    def _unread_job_fields(self, obj: Raw, *path: str) -> None:
        """A warning for the first field of the Job spec at ``path`` that decides when pods or the Job fail, which the
        Job stand-in does not apply."""
        spec = mapping(obj, *path)
        for name in UNREAD_JOB_FIELDS:
            if spec.get(name) is not None:
                problem = "kai simulate does not apply it: pods fail by their fail-after, and a Job by its backoffLimit"
                self._report(WARNING, obj, ".".join((*path, name)), problem)
                return

    def _report(self, severity: str, obj: Raw, field: str, problem: str) -> None:
        """A problem of ``obj``, once (a CronJob whose Job's name is taken meets it at every step)."""
        key = object_key(obj)
        found = Problem.of(severity, obj["kind"], key, InvalidObject(f"{obj['kind']} {key}", field, problem))
        if found not in self.problems:
            self.problems.append(found)


def _owner_key(obj: Raw, kind: str) -> str:
    """The key of ``obj``'s controlling owner of ``kind`` ("" when it has none)."""
    ref = controller_ref(obj)
    return f"{obj['metadata'].get('namespace')}/{ref['name']}" if ref is not None and ref["kind"] == kind else ""


def _owned_by(obj: Raw, owner: Raw) -> bool:
    return any(ref.get("uid") == uid(owner) for ref in owner_refs(obj))


def _create_new(cluster: MemoryCluster, obj: Raw) -> bool:
    """Creates ``obj`` unless an object of its name exists (one a workload made earlier, submitted again); whether
    it did."""
    if cluster.peek(obj["kind"], object_key(obj)) is not None:
        return False
    cluster.create(obj["kind"], obj)
    return True

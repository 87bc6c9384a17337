"""The CronJob controller ``kai simulate`` stands in for (Kubernetes' cronjob controller v2), on the simulated clock.

At each step the controller runs the latest scheduled time not yet run (since ``status.lastScheduleTime``, else the
CronJob's creation, else the simulation's start), as the real one does when it wakes: times missed in between are
not run, and with ``startingDeadlineSeconds`` nothing older than that is run. ``suspend`` runs nothing;
``concurrencyPolicy: Forbid`` runs nothing while a Job of it is active (the time stays unmet, so it runs late once
the Job is done, if the deadline allows), ``Replace`` deletes the active Jobs first; neither acts when the Job of
that time is already active (its time was run). A Job is ``<cronjob>-<scheduled minutes since the epoch>`` from
``spec.jobTemplate`` (its labels and annotations, not the CronJob's), owned by the CronJob, with the
``batch.kubernetes.io/cronjob-scheduled-timestamp`` annotation; finished Jobs beyond ``successfulJobsHistoryLimit``
(3) and ``failedJobsHistoryLimit`` (1) are deleted, oldest first. ``sync`` decides; ``stand_ins.cron_job`` makes and
deletes.
"""

from dataclasses import dataclass, field
from typing import Any

from kai.cluster.port import Raw
from kai.components.sim.cron_schedule import CronSchedule, parse_schedule
from kai.components.sim.workload_objects import (
    Invalid,
    check_job_spec,
    child,
    mapping,
    template_meta,
    uid,
    whole_number,
)
from kai.core.model.errors import InvalidObject
from kai.core.model.meta import format_time, parse_time

SCHEDULED_ANNOTATION = "batch.kubernetes.io/cronjob-scheduled-timestamp"
POLICIES = ("Allow", "Forbid", "Replace")
FINISHED = ("Complete", "Failed")


@dataclass(frozen=True)
class CronJobSpec:
    schedule: CronSchedule
    suspend: bool
    policy: str
    deadline_s: float | None
    history: dict[str, int]
    """Finished Jobs kept, by how they finished (``Complete``, ``Failed``)."""


@dataclass
class Sync:
    """What one pass of the controller does to a CronJob."""

    remove: list[Raw] = field(default_factory=list)
    """Jobs to delete (with their pods): finished ones past the history limits, active ones a Replace ends."""
    job: Raw | None = None
    """The Job to make now, if its name is free (``made``)."""
    scheduled: float = 0.0
    """The time ``job`` is for."""
    status: dict[str, Any] = field(default_factory=dict)
    """The status without ``job``: as it stays when the Job's name is another's (the controller's AlreadyExists)."""
    active: list[Raw] = field(default_factory=list)

    def made(self) -> None:
        """``job`` was made: the status names it active and its time met."""
        assert self.job is not None
        self.status["lastScheduleTime"] = format_time(self.scheduled)
        _set_active(self.status, [*self.active, self.job])


def cron_job_spec(cron_job: Raw) -> CronJobSpec:
    """What the controller reads of a CronJob; what it cannot use is ``Invalid`` naming the field."""
    spec = mapping(cron_job, "spec")
    schedule = parse_schedule(spec.get("schedule"), spec.get("timeZone"))
    check_job_spec(cron_job, "spec", "jobTemplate", "spec")  # once here, not at every Job made from it
    policy = spec.get("concurrencyPolicy") or "Allow"
    if policy not in POLICIES:
        raise Invalid("spec.concurrencyPolicy", f"got {policy!r}; allowed: {', '.join(POLICIES)}")
    deadline = spec.get("startingDeadlineSeconds")
    for field_path, value in (
        ("metadata.creationTimestamp", cron_job["metadata"].get("creationTimestamp")),
        ("status.lastScheduleTime", (cron_job.get("status") or {}).get("lastScheduleTime")),
    ):
        if value:
            try:
                parse_time(value, "CronJob", field_path)
            except InvalidObject as error:
                raise Invalid(field_path, error.problem) from None
    history = {
        "Complete": whole_number(cron_job, ("spec", "successfulJobsHistoryLimit"), 3),
        "Failed": whole_number(cron_job, ("spec", "failedJobsHistoryLimit"), 1),
    }
    return CronJobSpec(
        schedule,
        spec.get("suspend") is True,
        policy,
        None if deadline is None else float(whole_number(cron_job, ("spec", "startingDeadlineSeconds"), 0)),
        history,
    )


def finished(job: Raw) -> str | None:
    """``Complete`` or ``Failed`` once the Job has finished (its condition of that type is true)."""
    for condition in (job.get("status") or {}).get("conditions") or []:
        if condition.get("type") in FINISHED and condition.get("status") == "True":
            return str(condition["type"])
    return None


def sync(cron_job: Raw, spec: CronJobSpec, jobs: list[Raw], now: float, start: float) -> Sync:
    """One pass over ``cron_job`` at ``now``, given the Jobs it owns; ``start``: when a CronJob without a creation
    time was created (the simulation's start)."""
    name = f"CronJob {cron_job['metadata'].get('namespace')}/{cron_job['metadata']['name']}"
    status = dict(cron_job.get("status") or {})
    decided = Sync(status=status)
    jobs = sorted(jobs, key=lambda job: (job["metadata"].get("creationTimestamp") or "", job["metadata"]["name"]))
    active = [job for job in jobs if finished(job) is None]
    for how, kept in spec.history.items():
        done = [job for job in jobs if finished(job) == how]
        decided.remove += done[: max(len(done) - kept, 0)]
    complete = [job for job in jobs if finished(job) == "Complete"]
    if complete:
        status["lastSuccessfulTime"] = max(str((job.get("status") or {}).get("completionTime", "")) for job in complete)
    scheduled = None if spec.suspend else _unmet(cron_job, spec, now, start, name)
    if scheduled is not None:
        job = job_for(cron_job, spec.schedule, scheduled, now)
        if _named(job, active):  # the controller's inActiveListByName: that time's Job runs, nothing else is done
            status["lastScheduleTime"] = format_time(scheduled)
        elif not (spec.policy == "Forbid" and active):
            if spec.policy == "Replace":
                decided.remove += active
                active = []
            if _named(job, jobs):  # it made that Job before, now finished (its AlreadyExists): the time is met
                status["lastScheduleTime"] = format_time(scheduled)
            else:
                decided.job, decided.scheduled = job, scheduled
    decided.active = active
    _set_active(status, active)
    return decided


def _named(job: Raw, jobs: list[Raw]) -> bool:
    """Whether ``jobs`` has one of ``job``'s name (the name of its scheduled time)."""
    return any(other["metadata"]["name"] == job["metadata"]["name"] for other in jobs)


def _unmet(cron_job: Raw, spec: CronJobSpec, now: float, start: float, name: str) -> float | None:
    """The latest scheduled time not run yet (the controller's ``mostRecentScheduleTime``): after the last one run
    (else the creation), and no earlier than ``startingDeadlineSeconds`` ago."""
    last = (cron_job.get("status") or {}).get("lastScheduleTime")
    created = cron_job["metadata"].get("creationTimestamp")
    if last:
        earliest = parse_time(last, name, "status.lastScheduleTime")
    else:
        earliest = parse_time(created, name, "metadata.creationTimestamp") if created else start
    if spec.deadline_s is not None:
        earliest = max(earliest, now - spec.deadline_s)
    return spec.schedule.latest(earliest, now)


def job_for(cron_job: Raw, schedule: CronSchedule, scheduled: float, now: float) -> Raw:
    """The Job the controller makes for the time ``scheduled``, created at ``now``."""
    template = mapping(cron_job, "spec", "jobTemplate")
    name = f"{cron_job['metadata']['name']}-{int(scheduled // 60)}"
    job = child(cron_job, "batch/v1", "Job", name, mapping(template, "spec"))
    job["metadata"]["labels"] = template_meta(template, "labels")
    job["metadata"]["annotations"] = {
        **template_meta(template, "annotations"),
        SCHEDULED_ANNOTATION: schedule.stamp(scheduled),
    }
    job["metadata"]["creationTimestamp"] = format_time(now)
    uid(job)
    return job


def _set_active(status: dict[str, Any], active: list[Raw]) -> None:
    status["active"] = [_reference(job) for job in active]
    if not status["active"]:
        del status["active"]


def _reference(job: Raw) -> dict[str, str]:
    meta = job["metadata"]
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "namespace": meta["namespace"],
        "name": meta["name"],
        "uid": uid(job),
    }

"""One scheduling cycle: open a session with the configured plugins, run the configured actions, close it.

``run_cycle(cluster, config, now) -> Session``: the session's ``result`` lists binds, evictions, pipelines, started
podgroups and every unschedulable podgroup with its reason, so "nothing happened" is never silent.
"""

from collections.abc import Callable
from dataclasses import replace

from kai.core.framework.config import SchedulerConfig
from kai.core.framework.decisions import Unschedulable
from kai.core.framework.session import Session
from kai.core.registry import ACTIONS, PLUGINS, Runs
from kai.core.state.fit_errors import NOT_READY, JobFitError, render_detailed, render_short
from kai.core.state.pod_status import PodStatus
from kai.core.state.podgroup_info import PodGroupInfo
from kai.core.state.reasons import Reason, ReasonKind, headline_order
from kai.core.state.snapshot import ClusterInfo


def open_session(
    cluster: ClusterInfo, config: SchedulerConfig, now: float, clock: Callable[[], float] = lambda: 0.0
) -> Session:
    ssn = Session(cluster, config, now, clock)
    for option in config.plugins:
        entry = PLUGINS.get(option.name)
        if entry is None or entry.build is None:
            if entry is None or entry.runs is not Runs.ENDPOINT:
                ssn.result.skipped.append(f"plugin {option.name}")
            continue
        entry.build(option.arguments).on_session_open(ssn)
    return ssn


def close_session(ssn: Session) -> None:
    """Report every podgroup that still waits, with KAI's reason and messages and the typed reasons beside them;
    the evictions of a victim podgroup the cycle evicted whole suspend its workload where it opted in."""
    result = ssn.result
    _suspensions(ssn)
    result.bind_requests_to_delete.extend(ssn.cluster.bind_requests_to_delete)
    may_wait = ssn.cluster.may_wait()  # no other job has a pending or gated pod
    for job in may_wait:
        waits = any(task.status in (PodStatus.PENDING, PodStatus.GATED) for task in job.tasks.values())
        if not job.fit_errors and waits and not job.is_ready_for_scheduling():
            # KAI's message ends a sub-group's part with a period; the rendering adds its own
            message = job.not_ready_message().rstrip(".")
            job.add_fit_error(JobFitError(NOT_READY, [message], why=job.not_ready_reason()))
    for job in [*may_wait, *ssn.cluster.unschedulable_jobs.values()]:
        if not job.fit_errors:
            continue
        pending = [t for t in job.tasks.values() if t.status is PodStatus.PENDING]
        if not pending and job.key in ssn.jobs:
            continue
        reason = job.fit_errors[0].reason if len(job.fit_errors) == 1 else "Unschedulable"
        reasons = typed_reasons(ssn, job)
        event = (NOT_READY, job.not_ready_message()) if reason == NOT_READY else None
        result.unschedulable[job.key] = Unschedulable(
            job.key, reason, render_short(job.fit_errors), render_detailed(job.fit_errors), reasons, event
        )
        for task in pending:
            errors = job.task_fit_errors.get(task.key)
            result.pod_errors[task.key] = errors.error() if errors is not None else render_short(job.fit_errors)
            own = errors.why if errors is not None else None
            if own is not None or reasons:
                result.pod_reasons[task.key] = own if own is not None else reasons[0]
            if not job.podgroup.mark_unschedulable:
                result.events_only.add(task.key)


def _suspensions(ssn: Session) -> None:
    """Decided once the cycle's evictions are all made: a podgroup may lose its pods to several preemptors."""
    victims = {e.podgroup_key for e in ssn.result.evictions if e.podgroup_key in ssn.jobs}
    owners = {key: owner for key in victims if (owner := ssn.disruption.suspension(ssn.jobs[key])) is not None}
    if owners:
        evictions = ssn.result.evictions
        ssn.result.evictions = [replace(e, suspend=owners.get(e.podgroup_key)) for e in evictions]


def typed_reasons(ssn: Session, job: PodGroupInfo) -> tuple[Reason, ...]:
    """The job's typed reasons, most decisive first: those of its fit errors (a fact already told inside another
    reason is not repeated) and the plugins' own (``wait_reason_fns``)."""
    found = [error.why or Reason(ReasonKind.UNKNOWN, {"text": error.detailed_message()}) for error in job.fit_errors]
    nested = {id(child) for reason in found for child in reason.children}
    found = [reason for reason in found if id(reason) not in nested]
    if job.key in ssn.jobs:
        for fn in ssn.wait_reason_fns:
            found.extend(fn(job, found))
    return headline_order(found)


def run_cycle(
    cluster: ClusterInfo, config: SchedulerConfig, now: float, timer: Callable[[], float] = lambda: 0.0
) -> Session:
    """``timer`` (seconds, monotonic) measures session open, each action and session close for metrics and bounds
    the victim search; the scheduler's clock itself comes in as ``now``."""
    started = timer()
    ssn = open_session(cluster, config, now, timer)
    ssn.result.open_ms = (timer() - started) * 1000
    for name in config.actions:
        action = ACTIONS.get(name)
        if action is None:
            ssn.result.skipped.append(f"action {name}")
            continue
        started = timer()
        action.execute(ssn)
        ssn.result.action_ms[name] = (timer() - started) * 1000
    started = timer()
    close_session(ssn)
    ssn.result.close_ms = (timer() - started) * 1000
    return ssn

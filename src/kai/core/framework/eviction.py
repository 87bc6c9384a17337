"""Running the victim solver for one action over its pending jobs; the parts reclaim, preempt and consolidation
share (KAI's actions/*/ Execute loops differ only in filters, victims and validators)."""

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from kai.core.framework.fit_reasons import refused_everywhere
from kai.core.framework.job_allocation import tasks_to_allocate
from kai.core.framework.queueing.job_queue import JobQueueOptions, JobsOrderByQueues
from kai.core.framework.session import Session
from kai.core.framework.signatures import MinimalFailedJobs
from kai.core.framework.victims.hopeless import Proofs, Yields
from kai.core.framework.victims.scenario import Scenario
from kai.core.framework.victims.scenario_search import JobSolver
from kai.core.framework.victims.search_budget import ActionBudget
from kai.core.framework.victims.victim_solver import EvictionMessages, ScenarioSolver, Validator, feasible_nodes
from kai.core.state.fit_errors import POD_SCHEDULING_ERRORS, JobFitError, TaskFitErrors
from kai.core.state.pod_status import ALIVE
from kai.core.state.podgroup_info import PodGroupInfo
from kai.core.state.task import TaskInfo

JobFilter = Callable[[PodGroupInfo], bool]


def each_task(
    message: Callable[[TaskInfo, PodGroupInfo], str], why: Callable[[TaskInfo, PodGroupInfo], str]
) -> EvictionMessages:
    """Eviction messages (KAI's) and reasons (kai's audit) made one victim task at a time."""

    def messages(tasks: list[TaskInfo], preemptor: PodGroupInfo) -> list[tuple[str, str]]:
        return [(message(task, preemptor), why(task, preemptor)) for task in tasks]

    return messages


def victim_candidates(
    ssn: Session, accept: JobFilter, pool: Iterable[PodGroupInfo] | None = None
) -> dict[str, PodGroupInfo]:
    """Jobs with a live pod that pass ``accept`` (KAI's GetVictimCandidates), from ``pool`` (default: every job),
    which an action narrows to the only jobs ``accept`` could take (at 100,000 jobs, a scan of every task per
    preemptor was most of a cycle)."""
    return {
        job.key: job for job in (ssn.jobs.values() if pool is None else pool) if has_live_pod(ssn, job) and accept(job)
    }


def has_live_pod(ssn: Session, job: PodGroupInfo) -> bool:
    """A pod alive, pending or on a known node."""
    return any(t.status in ALIVE and (not t.node_name or t.node_name in ssn.nodes.by_name) for t in job.tasks.values())


def may_lose_pods(job: PodGroupInfo) -> bool:
    """What every victims queue keeps of its candidates (``VICTIMS``)."""
    return job.preemptible and job.has_active_allocated()


VICTIMS = JobQueueOptions(filter_non_preemptible=True, filter_non_active_allocated=True, victim_queue=True)
"""A cached victims queue (KAI's NewCachedVictimsQueueGenerator): preemptible jobs with placed pods, worst first."""


def candidates_queue(ssn: Session, candidates: dict[str, PodGroupInfo]) -> JobsOrderByQueues:
    queue = JobsOrderByQueues(ssn, VICTIMS)
    queue.initialize(candidates)
    return queue


def cached_victims(make: Callable[[], JobsOrderByQueues]) -> Callable[[], JobsOrderByQueues]:
    """A fresh victims queue per call, made once, on the first call (KAI's NewCachedVictimsQueueGenerator, which
    finds the candidates once): a job's solver asks for one queue per probe and per generator. Each probe starts
    from the same state (the last one's statement discarded), so the queue is made once and copied."""
    built: JobsOrderByQueues | None = None

    def build() -> JobsOrderByQueues:
        nonlocal built
        if built is None:
            built = make()
        return built.copy()

    return build


@runtime_checkable
class ScopedVictimFilter(Protocol):
    """A victim filter that, for the pending jobs of one queue, accepts every victim but those ``involved`` names
    without looking at the pending job and without side effects: a search can then ask it about those only."""

    def __call__(self, pending: PodGroupInfo, victim: PodGroupInfo) -> bool: ...

    def involved(self, queue: str) -> list[str]:
        """Job keys, in session order."""
        ...


@runtime_checkable
class QueueVictimFilter(Protocol):
    """A victim filter that judges a victim by its queue alone, without side effects: a search can leave out the
    queues it ``refused`` instead of asking about each of their jobs."""

    def __call__(self, pending: PodGroupInfo, victim: PodGroupInfo) -> bool: ...

    def refused(self, pending: PodGroupInfo, queues: Iterable[str]) -> list[str]:
        """Those of ``queues`` whose jobs it refuses for ``pending``."""
        ...


def pending_jobs(ssn: Session, action: str, preemptible_only: bool = False) -> JobQueueOptions:
    """The jobs an evicting action tries: ready, pending, past their preemption delay (and preemptible, for
    consolidation), at most the action's queue depth per queue."""
    return JobQueueOptions(
        filter_non_pending=True,
        filter_unready=True,
        filter_non_preemptible=preemptible_only,
        filter_within_preemption_delay=True,
        max_jobs_queue_depth=ssn.queue_depth(action),
    )


def all_of(checks: list[Validator]) -> Validator:
    """A scenario validator that accepts only what every registered validator accepts."""

    def valid(scenario: Scenario) -> bool:
        return all(check(scenario) for check in checks)

    return valid


def _by_queue(job: PodGroupInfo) -> str:
    return job.queue


@dataclass(frozen=True, slots=True)
class SolverAction:
    """What an action that evicts to make room (reclaim, preempt, consolidation) gives the shared search."""

    name: str
    pending: JobQueueOptions
    """Which pending jobs it offers, in fair-share order (``pending_jobs``)."""
    victims: Callable[[PodGroupInfo], Callable[[], JobsOrderByQueues]]
    """A job's victim candidates, in the order they are tried."""
    validator: Validator
    """Whether a scenario is allowed (the plugins' reclaim or preempt checks)."""
    messages: EvictionMessages
    """The events of the pods it evicts."""
    eligible: JobFilter | None = None
    """A job that fails it is passed over."""
    attempt: JobFilter | None = None
    """A cheap check before the search: a job that fails it counts as failed."""
    signature_scope: Callable[[PodGroupInfo], str] = _by_queue
    """Where a failed job's scheduling signature holds: its queue, or the whole cluster (consolidation: "")."""
    yields: Yields | None = None
    """What the validator lets a job take from each victim queue: proves searches and scenarios hopeless before
    they are simulated (``victims.hopeless``)."""


def run_solver_action(ssn: Session, action: SolverAction) -> None:
    """For each pending job in fair-share order, find victims and commit the solution.

    A job that is not ``eligible`` is passed over. With scheduling signatures on, a job no easier than one that
    already failed in the same scope is skipped; so is one that no eviction could help (a victim-invariant
    pre-predicate fails), which says why in its fit errors. A job that fails ``attempt`` or the search counts as
    failed. The action stops when its search budget is spent."""
    eligible, attempt, signature_scope = action.eligible, action.attempt, action.signature_scope
    jobs = JobsOrderByQueues(ssn, action.pending)
    # the jobs with a pending task, in the same order, without a test of every job (each action's queue is made once)
    jobs.initialize({job.key: job for job in ssn.pending_jobs()} if action.pending.filter_non_pending else ssn.jobs)
    failures: dict[str, MinimalFailedJobs] = {}
    budget = ActionBudget(ssn.config.search_budgets, action.name, ssn.clock)
    validator = action.validator
    if ssn.disruption.active:
        validator = all_of([validator, _within_disruption_budgets(ssn, action.name)])
    solver = ScenarioSolver(ssn, validator, action.messages)
    proofs = Proofs(ssn, action.yields) if action.yields is not None else None
    while not jobs.empty():
        job = jobs.pop()
        if job is None:
            break
        if eligible is not None and not eligible(job):
            continue
        failed = failures.setdefault(signature_scope(job), MinimalFailedJobs(ssn.footprints))
        like = failed.no_easier_than(job) if ssn.config.use_scheduling_signatures else None
        if like is not None:
            ssn.disruption.skipped_like(job, like)
            continue
        if _blocked_for_good(ssn, job):
            continue
        if attempt is not None and not attempt(job):
            failed.failed(job)
            continue
        ssn.job_solution_start()
        search = JobSolver(ssn, feasible_nodes(ssn, job), solver, action.victims(job), action.name, budget, proofs)
        solution, result = search.solve(job)
        if solution.solved and solution.statement is not None:
            solution.statement.commit(action.name)
            ssn.result.scheduled[action.name] = ssn.result.scheduled.get(action.name, 0) + 1
            continue
        if solution.statement is not None:
            solution.statement.discard()
        if result.stops_action:
            return
        failed.failed(job)


def _within_disruption_budgets(ssn: Session, action: str) -> Validator:
    """A validator: the scenario's evictions fit the PodDisruptionBudgets and the eviction budget left."""

    def valid(scenario: Scenario) -> bool:
        victims = (task for tasks in scenario.victims.values() for task in tasks)
        return ssn.disruption.admits(scenario.preemptor, victims, action)

    return valid


def _blocked_for_good(ssn: Session, job: PodGroupInfo) -> bool:
    """KAI's VictimInvariantPrePredicateFailureForTasks: the first of the job's next tasks that a victim-invariant
    pre-predicate rejects makes the job's fit error (its text as the pod's reason)."""
    for task in tasks_to_allocate(ssn, job, False):
        for check in ssn.victim_invariant_fns:
            failure = check(task)
            if failure is None:
                continue
            why = refused_everywhere(failure, task.key)
            if task.key not in job.task_fit_errors:
                job.task_fit_errors[task.key] = TaskFitErrors(headline=failure, why=why)
            job.add_fit_error(
                JobFitError(
                    POD_SCHEDULING_ERRORS,
                    [f"Resources were not found for pod {task.namespace}/{task.name} due to: {failure}"],
                    why=why,
                )
            )
            return True
    return False

"""minruntime: a job that started recently is protected from preemption and reclaim (KAI plugins/minruntime).

The minimum runtime comes from the queues: for preempt, the first ``preemptMinRuntime`` from the victim's queue up
to the root; for reclaim, ``reclaimMinRuntime`` found the same way (``queue``) or, by default (``lca``), starting
one level below the lowest common ancestor of the two queues, on the victim's side. Without a queue value the
plugin's default applies. A protected job is not a victim; a protected elastic job may lose pods above its gang
size, but no solution may take one of its pod sets below its minimum.

KAI says nothing when protection is why no victim could be found; kai notes every protected victim a pending job
passed over and, if the job still waits at session close, says so as a typed reason: wait for the victim whose
protection ends soonest among those that together hold what the job asks for.
"""

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from kai.core.framework.job_allocation import init_request
from kai.core.framework.session import Session
from kai.core.framework.victims.scenario import Scenario
from kai.core.model.duration import parse_duration
from kai.core.model.errors import InvalidObject
from kai.core.state.pod_status import ACTIVE_ALLOCATED
from kai.core.state.podgroup_info import PodGroupInfo
from kai.core.state.reasons import Fix, FixKind, Reason, ReasonKind
from kai.core.state.task import TaskInfo

WHERE = "scheduler config"
METHODS = ("lca", "queue")


def _default(arguments: Mapping[str, Any], key: str) -> float:
    text = str(arguments.get(key, "0s"))
    return max(0.0, parse_duration(text, WHERE, f"minruntime.arguments.{key}", days=True))


class MinRuntimePlugin:
    name = "minruntime"

    def __init__(self, arguments: Mapping[str, Any]) -> None:
        self.preempt_default = _default(arguments, "defaultPreemptMinRuntime")
        self.reclaim_default = _default(arguments, "defaultReclaimMinRuntime")
        self.method = str(arguments.get("reclaimResolveMethod", "lca"))
        if self.method not in METHODS:
            raise InvalidObject(WHERE, "minruntime.arguments.reclaimResolveMethod", "allowed: lca, queue")

    def on_session_open(self, ssn: Session) -> None:
        self.ssn = ssn
        ssn.preempt_victim_filters.append(ScopedFilter(self.preempt_filter, self.preempt_involved))
        ssn.reclaim_victim_filters.append(ScopedFilter(self.reclaim_filter, self.reclaim_involved))
        ssn.preempt_validators.append(self.preempt_valid)
        ssn.reclaim_validators.append(self.reclaim_valid)
        ssn.wait_reason_fns.append(self.wait_reasons)
        ssn.eviction_guards.append(self.may_evict)
        self.protected: dict[str, dict[str, tuple[float, str, float, str]]] = {}
        """Per pending job, the victims protection kept from it: (protected until, queue, GPUs, action)."""
        self.reclaim_mins: dict[tuple[str, str], float] = {}
        """Per (reclaimer's queue, victim's queue), the victim's reclaim min-runtime: every victim is asked once per
        reclaimer, and the queues are fixed for the session."""
        self._recent_jobs: tuple[tuple[str, int], list[tuple[str, PodGroupInfo]]] | None = None
        """The jobs that may be protected (``_recent``), with what they were found for."""

    def _path(self, queue: str) -> list[str]:
        """Queue names from the root down to ``queue``."""
        path: list[str] = []
        current = self.ssn.queues.get(queue)
        while current is not None:
            path.insert(0, current.uid)
            current = self.ssn.queues.get(current.parent) if current.parent else None
        return path

    def _first(self, start: str, field: str, default: float) -> float:
        current = self.ssn.queues.get(start)
        while current is not None:
            value: float | None = getattr(current.queue, field)
            if value is not None:
                return value
            current = self.ssn.queues.get(current.parent) if current.parent else None
        return default

    def _preempt_min(self, victim: PodGroupInfo) -> float:
        return self._first(victim.queue, "preempt_min_runtime_s", self.preempt_default)

    def _reclaim_min(self, reclaimer: PodGroupInfo, victim: PodGroupInfo) -> float:
        return self._queues_reclaim_min(reclaimer.queue, victim.queue)

    def _queues_reclaim_min(self, reclaimer_queue: str, victim_queue: str) -> float:
        pair = (reclaimer_queue, victim_queue)
        minimum = self.reclaim_mins.get(pair)
        if minimum is None:
            minimum = self.reclaim_mins[pair] = self._resolve_reclaim_min(*pair)
        return minimum

    def _resolve_reclaim_min(self, reclaimer_queue: str, victim_queue: str) -> float:
        start = victim_queue
        if self.method == "lca":
            mine, theirs = self._path(reclaimer_queue), self._path(victim_queue)
            common = 0
            while common < min(len(mine), len(theirs)) and mine[common] == theirs[common]:
                common += 1
            start = theirs[min(common, len(theirs) - 1)]
        return self._first(start, "reclaim_min_runtime_s", self.reclaim_default)

    def _protected(self, victim: PodGroupInfo, minimum: float) -> bool:
        started = victim.last_start_ts
        return started is not None and started + minimum > self.ssn.now

    @staticmethod
    def _elastic(job: PodGroupInfo) -> bool:
        return any(ps.min_available < len(ps.tasks) for ps in job.pod_sets.values())

    def preempt_filter(self, preemptor: PodGroupInfo, victim: PodGroupInfo) -> bool:
        return self._elastic(victim) or self._unprotected(preemptor, victim, self._preempt_min(victim), "preempt")

    def reclaim_filter(self, reclaimer: PodGroupInfo, victim: PodGroupInfo) -> bool:
        minimum = self._reclaim_min(reclaimer, victim)
        if not self._protected(victim, minimum):  # the common case, asked of every job per reclaimer: tested first
            return True
        return self._elastic(victim) or self._unprotected(reclaimer, victim, minimum, "reclaim")

    def reclaim_involved(self, queue: str) -> list[str]:
        """The jobs ``reclaim_filter`` may refuse (or note) for reclaimers of ``queue``: protected, not elastic.
        Fixed for an action: start times change only when allocate starts a job. The rarer and cheaper test first."""
        return [
            key
            for key, job in self._recent("reclaim_min_runtime_s", self.reclaim_default)
            if self._protected(job, self._queues_reclaim_min(queue, job.queue)) and not self._elastic(job)
        ]

    def preempt_involved(self, queue: str) -> list[str]:
        """The jobs ``preempt_filter`` may refuse (or note) for preemptors of ``queue`` (victims of that queue):
        protected, not elastic."""
        return [
            key
            for key, job in self._recent("preempt_min_runtime_s", self.preempt_default)
            if job.queue == queue and not self._elastic(job) and self._protected(job, self._preempt_min(job))
        ]

    def _recent(self, field: str, default: float) -> list[tuple[str, PodGroupInfo]]:
        """The jobs, in session order, that started less than the longest minimum runtime of ``field`` ago (any
        queue's or the default): only they can be protected. Each action asks per queue, and a scan of every job
        per queue was half of a steady cycle at 100,000 jobs; made again after a commit (allocate starts jobs)."""
        ssn = self.ssn
        cache_key = (field, len(ssn.committed))
        if self._recent_jobs is None or self._recent_jobs[0] != cache_key:
            values = [getattr(info.queue, field) for info in ssn.queues.values()]
            longest = max([default, *(value for value in values if value is not None)])
            recent = [
                (key, job)
                for key, job in ssn.jobs.items()
                if job.last_start_ts is not None and job.last_start_ts + longest > ssn.now
            ]
            self._recent_jobs = (cache_key, recent)
        return self._recent_jobs[1]

    def _unprotected(self, pending: PodGroupInfo, victim: PodGroupInfo, minimum: float, action: str) -> bool:
        if not self._protected(victim, minimum):
            return True
        if victim.preemptible and victim.has_active_allocated():
            held = sum(t.accepted_gpus or t.gpus_quota for t in victim.tasks.values() if t.status in ACTIVE_ALLOCATED)
            until = (victim.last_start_ts or 0.0) + minimum
            self.protected.setdefault(pending.key, {})[victim.key] = (until, victim.queue, held, action)
        return False

    def wait_reasons(self, job: PodGroupInfo, found: Sequence[Reason]) -> list[Reason]:
        """Victims protection kept from the job; the fix waits for the one that, taking them soonest first, brings
        together the GPUs the job asks for."""
        victims = self.protected.get(job.key)
        if not victims:
            return []
        ordered = sorted(victims.items(), key=lambda item: (item[1][0], item[0]))
        needed, held = init_request(self.ssn, job)[2], 0.0
        wait_for = ordered[-1]
        for entry in ordered:
            held += entry[1][2]
            if held >= needed:
                wait_for = entry
                break
        listed = [
            {"podgroup": key, "queue": queue, "until": until, "gpus": gpus, "action": action}
            for key, (until, queue, gpus, action) in ordered
        ]
        key, (until, queue, _, _) = wait_for
        fix = Fix(FixKind.WAIT_FOR_JOB, {"podgroup": key, "queue": queue, "until": until})
        return [Reason(ReasonKind.MIN_RUNTIME, {"victims": listed}, (fix,))]

    def _keeps_gangs(self, scenario: Scenario, minimum: Any) -> bool:
        for job_key in scenario.victims:
            job = self.ssn.jobs[job_key]
            if not self._elastic(job) or not self._protected(job, minimum(job)):
                continue
            if any(ps.count(ACTIVE_ALLOCATED) < ps.min_available for ps in job.pod_sets.values()):
                return False
        return True

    def may_evict(self, job: PodGroupInfo, tasks: list[TaskInfo]) -> bool:
        """kai's ``overlimiteviction`` asks: a job within its preempt min runtime (its queue's own decision, as a
        preemption is) loses no pod, but an elastic one may lose pods above its gang sizes."""
        if not self._protected(job, self._preempt_min(job)):
            return True
        taken = {task.key for task in tasks}
        return all(
            sum(1 for t in ps.tasks.values() if t.status in ACTIVE_ALLOCATED and t.key not in taken) >= ps.min_available
            for ps in job.pod_sets.values()
        )

    def preempt_valid(self, scenario: Scenario) -> bool:
        return self._keeps_gangs(scenario, self._preempt_min)

    def reclaim_valid(self, scenario: Scenario) -> bool:
        return self._keeps_gangs(scenario, lambda job: self._reclaim_min(scenario.preemptor, job))


class ScopedFilter:
    """A victim filter as a scoped one (``eviction.ScopedVictimFilter``): an unprotected or elastic victim is kept
    without a trace, so a search need only ask about the others."""

    def __init__(
        self, check: Callable[[PodGroupInfo, PodGroupInfo], bool], involved: Callable[[str], list[str]]
    ) -> None:
        self.check = check
        self.involved = involved

    def __call__(self, pending: PodGroupInfo, victim: PodGroupInfo) -> bool:
        return self.check(pending, victim)

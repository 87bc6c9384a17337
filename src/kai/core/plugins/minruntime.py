"""minruntime: a job that started recently is protected from preemption and reclaim (KAI plugins/minruntime).

The minimum runtime comes from the queues: for preempt, the first ``preemptMinRuntime`` from the victim's queue up
to the root; for reclaim, ``reclaimMinRuntime`` found the same way (``queue``) or, by default (``lca``), starting
one level below the lowest common ancestor of the two queues, on the victim's side. Without a queue value the
plugin's default applies. A protected job is not a victim; a protected elastic job may lose pods above its gang
size, but no solution may take one of its pod sets below its minimum.
"""

from collections.abc import Mapping
from typing import Any

from kai.core.framework.session import Session
from kai.core.framework.victims import Scenario
from kai.core.model.duration import parse_duration
from kai.core.model.errors import InvalidObject
from kai.core.state.pod_status import ACTIVE_ALLOCATED
from kai.core.state.podgroup_info import PodGroupInfo

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
        ssn.preempt_victim_filters.append(self.preempt_filter)
        ssn.reclaim_victim_filters.append(self.reclaim_filter)
        ssn.preempt_validators.append(self.preempt_valid)
        ssn.reclaim_validators.append(self.reclaim_valid)

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
        start = victim.queue
        if self.method == "lca":
            mine, theirs = self._path(reclaimer.queue), self._path(victim.queue)
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
        return self._elastic(victim) or not self._protected(victim, self._preempt_min(victim))

    def reclaim_filter(self, reclaimer: PodGroupInfo, victim: PodGroupInfo) -> bool:
        return self._elastic(victim) or not self._protected(victim, self._reclaim_min(reclaimer, victim))

    def _keeps_gangs(self, scenario: Scenario, minimum: Any) -> bool:
        for job_key in scenario.victims:
            job = self.ssn.jobs[job_key]
            if not self._elastic(job) or not self._protected(job, minimum(job)):
                continue
            if any(ps.count(ACTIVE_ALLOCATED) < ps.min_available for ps in job.pod_sets.values()):
                return False
        return True

    def preempt_valid(self, scenario: Scenario) -> bool:
        return self._keeps_gangs(scenario, self._preempt_min)

    def reclaim_valid(self, scenario: Scenario) -> bool:
        return self._keeps_gangs(scenario, lambda job: self._reclaim_min(scenario.preemptor, job))

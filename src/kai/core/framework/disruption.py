"""What a session may still disrupt (kai's, beyond KAI: ``docs/deviations.md``): PodDisruptionBudgets, the eviction
budget, and which evictions suspend a workload instead of deleting its pods.

KAI deletes its victims' pods, so PodDisruptionBudgets never get a say, and evicts as many as a cycle decides. kai
evicts through the Eviction API (the API server refuses what a PDB does not allow), so it chooses only victims the
PDBs it sees allow: a victim job that cannot lose a pod is no candidate, and a scenario whose evictions would take
a PDB past what its status allows is refused, as is one that takes more pods than the eviction budget has left
(``disruption.evictionBudget``: per cycle, and per minute counting the evictions the scheduler sent in the minute
before the cycle). Each commit uses up what its evictions took. Every pending job these rules kept from evicting is
noted, and told as a typed reason if it still waits at session close.

A pod counts against a PDB only while it is Running (the API server lets a Pending pod go regardless) and once only
(a pod in ``disruptedPods`` is already counted). A pod covered by two PDBs cannot be evicted through the API at all.
"""

from collections import Counter
from collections.abc import Iterable, Sequence

from kai.core.framework.config import DisruptionConfig
from kai.core.model import names
from kai.core.model.disruption_budget import DisruptionBudget
from kai.core.model.objects import OwnerRef
from kai.core.model.suspension import SUSPEND_FIELDS
from kai.core.state.pod_status import ACTIVE_ALLOCATED, PodStatus
from kai.core.state.podgroup_info import PodGroupInfo
from kai.core.state.reasons import Fix, FixKind, Reason, ReasonKind
from kai.core.state.snapshot import ClusterInfo
from kai.core.state.task import TaskInfo

EVICTED = frozenset({PodStatus.RELEASING, PodStatus.PIPELINED})
"""A victim's status once a scenario evicts it (re-placed elsewhere, it is still evicted and made again there)."""
MINUTE_S = 60.0
MULTIPLE = "<several>"
"""The budget a pod covered by more than one PDB is charged to: none is allowed (the API refuses such a pod)."""


class Disruption:
    def __init__(self, cluster: ClusterInfo, config: DisruptionConfig, now: float = 0.0) -> None:
        self.cluster = cluster
        budgets = cluster.disruption_budgets if config.pod_disruption_budgets else {}
        self.by_namespace: dict[str, list[DisruptionBudget]] = {}
        for budget in budgets.values():
            self.by_namespace.setdefault(budget.meta.namespace, []).append(budget)
        self.allowed: dict[str, int] = {key: budget.disruptions_allowed for key, budget in budgets.items()}
        self.allowed[MULTIPLE] = 0
        self.caps: list[tuple[str, int, int]] = []
        """(window, cap, left) of each eviction budget in force."""
        if config.per_cycle:
            self.caps.append(("cycle", config.per_cycle, config.per_cycle))
        if config.per_minute:
            left = max(0, config.per_minute - max(cluster.recent_evictions, _recorded(cluster, now)))
            self.caps.append(("minute", config.per_minute, left))
        self.active = bool(self.by_namespace or self.caps)
        """Whether anything limits evictions (else every check below passes without looking)."""
        self._covering: dict[str, str | None] = {}
        self._involved: list[str] | None = None
        self.notes: dict[str, Reason] = {}
        """Per pending job, what these rules last kept it from evicting."""

    # ------------------------------------------------------------------------------------------- PDBs

    def budget_of(self, task: TaskInfo) -> str | None:
        """The key of the PDB an eviction of the task counts against (``MULTIPLE`` for several), None for none."""
        if task.key in self._covering:
            return self._covering[task.key]
        pod = task.pod
        found: str | None = None
        if pod.phase == "Running" and not pod.deleting:
            covering = [
                b.key
                for b in self.by_namespace.get(pod.meta.namespace, ())
                if pod.meta.name not in b.disrupted_pods and b.covers(pod.meta.namespace, pod.meta.labels)
            ]
            found = covering[0] if len(covering) == 1 else (MULTIPLE if covering else None)
        self._covering[task.key] = found
        return found

    def budgets_of(self, task: TaskInfo) -> tuple[str, ...]:
        """The PDBs covering the task's pod, as the decision records them for the writer."""
        found = self.budget_of(task)
        if found != MULTIPLE:
            return (found,) if found else ()
        pod = task.pod
        return tuple(
            b.key
            for b in self.by_namespace.get(pod.meta.namespace, ())
            if b.covers(pod.meta.namespace, pod.meta.labels)
        )

    def refusal(self, tasks: Sequence[TaskInfo], action: str, capped: bool = True) -> Reason | None:
        """Why evicting all of ``tasks`` now is not allowed (the first budget it breaks), None when it is;
        ``capped=False`` asks the PDBs alone."""
        for window, cap, left in self.caps if capped else ():
            if len(tasks) > left:
                evidence = {"window": window, "cap": cap, "used": cap - left, "wanted": len(tasks), "action": action}
                fix = Fix(FixKind.WAIT_FOR_EVICTION_BUDGET, {"window": window})
                return Reason(ReasonKind.EVICTION_BUDGET, evidence, (fix,))
        if not self.by_namespace:
            return None
        wanted = Counter(key for task in tasks if (key := self.budget_of(task)) is not None)
        over = [key for key, count in wanted.items() if count > self.allowed[key]]
        if not over:
            return None
        listed = [
            {
                "budget": key,
                "spec": self._spec(key),
                "allowed": self.allowed[key],
                "wanted": wanted[key],
            }
            for key in sorted(over)
        ]
        fix = Fix(FixKind.WAIT_FOR_DISRUPTIONS, {"budget": listed[0]["budget"]})
        return Reason(ReasonKind.DISRUPTION_BUDGET, {"budgets": listed, "action": action}, (fix,))

    def _spec(self, key: str) -> str:
        if key == MULTIPLE:
            return "pods covered by more than one PodDisruptionBudget, which the Eviction API refuses"
        namespace = key.partition("/")[0]
        return next(b.spec_text() for b in self.by_namespace[namespace] if b.key == key)

    def protects(self, pending: PodGroupInfo, victim: PodGroupInfo, action: str) -> bool:
        """Whether the PDBs keep the victim job from losing its first pods now (a whole gang, or, elastic, any one
        pod); noted for the pending job."""
        if not self.by_namespace or not any(self.budget_of(task) for task in victim.tasks.values()):
            return False
        placed = [task for task in victim.tasks.values() if task.status in ACTIVE_ALLOCATED]
        elastic = any(ps.min_available < len(ps.tasks) for ps in victim.pod_sets.values())
        batches = [[task] for task in placed] if elastic else [placed]
        refusals = [self.refusal(batch, action, capped=False) for batch in batches]
        if any(refused is None for refused in refusals):
            return False
        refused = refusals[0]
        if refused is not None:
            self.notes[pending.key] = refused
        return True

    def involved(self) -> list[str]:
        """The jobs ``protects`` may be true of: those with a pod some PDB covers, in session order (fixed for a
        session: which pods run does not change until the next)."""
        if self._involved is None:
            jobs = self.cluster.jobs.items()
            self._involved = [key for key, job in jobs if any(self.budget_of(t) for t in job.tasks.values())]
        return self._involved

    def admits(self, preemptor: PodGroupInfo, victims: Iterable[TaskInfo], action: str) -> bool:
        """Whether a scenario's evictions (its victims evicted, re-placed or not) fit the budgets left; a refusal
        is noted for its preemptor."""
        if not self.active:
            return True
        refused = self.refusal([t for t in victims if t.status in EVICTED], action)
        if refused is not None:
            self.notes[preemptor.key] = refused
        return refused is None

    def consume(self, tasks: Iterable[TaskInfo]) -> None:
        """A commit's evictions use up the budgets."""
        count = 0
        for task in tasks:
            count += 1
            key = self.budget_of(task)
            if key is not None and key != MULTIPLE:
                self.allowed[key] -= 1
        self.caps = [(window, cap, max(0, left - count)) for window, cap, left in self.caps]

    def skipped_like(self, job: PodGroupInfo, failed: PodGroupInfo) -> None:
        """A job not tried because one like it failed: what kept that one from evicting keeps it too."""
        note = self.notes.get(failed.key)
        if note is not None:
            self.notes[job.key] = note

    def wait_reasons(self, job: PodGroupInfo, found: Sequence[Reason]) -> list[Reason]:
        note = self.notes.get(job.key)
        return [note] if note is not None else []

    # ------------------------------------------------------------------------------------------- suspend

    def suspension(self, job: PodGroupInfo) -> OwnerRef | None:
        """The workload to suspend for a job evicted whole, when it or its queue opted in and its kind can be."""
        strategy = job.podgroup.eviction_strategy
        if not strategy:
            queue = self.cluster.queues.get(job.queue)
            strategy = queue.queue.eviction_strategy if queue is not None else ""
        owner = job.podgroup.owner
        if strategy != names.SUSPEND or owner is None or (owner.api_version, owner.kind) not in SUSPEND_FIELDS:
            return None
        if any(task.status in ACTIVE_ALLOCATED for task in job.tasks.values()):
            return None
        return owner


def _recorded(cluster: ClusterInfo, now: float) -> int:
    """Pods evicted in the minute before ``now`` as the PodGroups' eviction records tell (what a scheduler that
    restarted, or ``kai explain``, knows of them)."""
    jobs = [*cluster.jobs.values(), *cluster.unschedulable_jobs.values()]
    return sum(pods for job in jobs for at, pods in job.podgroup.recent_evictions if now - MINUTE_S < at <= now)


class Protected:
    """The PDBs as a scoped victim filter (``eviction.ScopedVictimFilter``) of one action: a victim job they keep
    from losing pods is no candidate."""

    def __init__(self, disruption: Disruption, action: str) -> None:
        self.disruption = disruption
        self.action = action

    def __call__(self, pending: PodGroupInfo, victim: PodGroupInfo) -> bool:
        return not self.disruption.protects(pending, victim, self.action)

    def involved(self, queue: str) -> list[str]:
        return self.disruption.involved()

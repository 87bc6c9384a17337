"""PodGroupInfo (a job), its pod sets and sub-group sets, with KAI's gang bookkeeping.

A podgroup without ``subGroups`` has one pod set, ``default``, with the gang size ``minMember``. With sub-groups,
each leaf is a pod set with its own gang size and every inner sub-group is a set of sets (KAI's SubGroupSet).
"""

from collections.abc import Iterator

from kai.core.model import names
from kai.core.model.objects import PodGroup, TopologyConstraint
from kai.core.state.fit_errors import JobFitError, TaskFitErrors
from kai.core.state.pod_status import ACTIVE_ALLOCATED, ACTIVE_USED, ALIVE, ALLOCATED, PodStatus
from kai.core.state.reasons import Fix, FixKind, Reason, ReasonKind
from kai.core.state.task import TaskInfo

GATED = frozenset({PodStatus.GATED})


class PodSet:
    """A set of pods with one gang size (``min_available``; 0 for a sub-group whose pods are all elastic)."""

    __slots__ = ("min_available", "name", "parent", "tasks", "topology")

    def __init__(self, name: str, min_available: int, topology: TopologyConstraint | None) -> None:
        self.name = name
        self.min_available = max(min_available, 0)
        self.topology = topology
        self.tasks: dict[str, TaskInfo] = {}
        self.parent: SubGroupSet | None = None

    def count(self, statuses: frozenset[PodStatus]) -> int:
        return len([task for task in self.tasks.values() if task.status in statuses])

    @property
    def active_allocated(self) -> int:
        return self.count(ACTIVE_ALLOCATED)

    @property
    def active_used(self) -> int:
        return self.count(ACTIVE_USED)

    @property
    def members_to_satisfy(self) -> int:
        """KAI's GetMinMembersToSatisfy: for a pod set, its gang size in pods."""
        return self.min_available

    @property
    def satisfied_members(self) -> int:
        """KAI's GetNumActiveAllocatedMembers: for a pod set, its placed pods."""
        return self.active_allocated

    def is_min_satisfied(self) -> bool:
        return self.active_allocated >= self.min_available

    def is_ready_for_scheduling(self) -> bool:
        alive = sum(1 for task in self.tasks.values() if task.status in ALIVE and task.status is not PodStatus.GATED)
        return alive >= self.min_available


class SubGroupSet:
    """A sub-group with children: other sets and pod sets, possibly under its own topology constraint.

    Its gang is ``min_subgroup`` of its direct members (all of them when unset): KAI's elastic gang tree.
    """

    __slots__ = ("children", "min_subgroup", "name", "parent", "pod_sets", "topology")

    def __init__(self, name: str, topology: TopologyConstraint | None, min_subgroup: int | None = None) -> None:
        self.name = name
        self.topology = topology
        self.min_subgroup = min_subgroup
        self.children: list[SubGroupSet] = []
        self.pod_sets: list[PodSet] = []
        self.parent: SubGroupSet | None = None

    def members(self) -> "list[Member]":
        return [*self.children, *self.pod_sets]

    def all_pod_sets(self) -> Iterator[PodSet]:
        yield from self.pod_sets
        for child in self.children:
            yield from child.all_pod_sets()

    @property
    def members_to_satisfy(self) -> int:
        if self.min_subgroup is not None:
            return self.min_subgroup
        return len(self.children) + len(self.pod_sets)

    @property
    def satisfied_members(self) -> int:
        """Direct members that reached their own gang (KAI's GetNumActiveAllocatedDirectSubGroups)."""
        return sum(1 for member in self.members() if member.is_min_satisfied())

    def is_min_satisfied(self) -> bool:
        return self.satisfied_members >= self.members_to_satisfy

    def is_ready_for_scheduling(self) -> bool:
        ready = sum(1 for member in self.members() if member.is_ready_for_scheduling())
        return ready >= self.members_to_satisfy

    def unreachable(self) -> "Iterator[SubGroupSet]":
        """The sets in this tree (itself included) that ask for more members than they have: never ready."""
        if self.members_to_satisfy > len(self.children) + len(self.pod_sets):
            yield self
        for child in self.children:
            yield from child.unreachable()

    def too_many_text(self) -> str:
        """KAI's admission text for a ``minSubGroup`` above the number of direct children."""
        prefix = "" if self.parent is None else f'subgroup "{self.name}": '
        wanted, members = self.members_to_satisfy, len(self.children) + len(self.pod_sets)
        return f"{prefix}minSubGroup ({wanted}) exceeds the number of direct child SubGroups ({members})"


Member = SubGroupSet | PodSet
"""A direct child of a sub-group set (KAI's SubGroupMember)."""


class PodGroupInfo:
    __slots__ = (
        "creation_ts",
        "fit_errors",
        "init_request_cache",
        "journal",
        "key",
        "last_eviction_ts",
        "last_start_ts",
        "name",
        "namespace",
        "pod_sets",
        "podgroup",
        "preemptible",
        "preemption_policy",
        "priority",
        "queue",
        "root",
        "stale_ts",
        "status_version",
        "task_fit_errors",
        "tasks",
        "tasks_to_allocate_cache",
    )

    def __init__(self, podgroup: PodGroup, priority: int, journal: "list[PodGroupInfo] | None" = None) -> None:
        self.podgroup = podgroup
        self.journal = journal
        """Where the job reports itself the first time a task of it changes status (``Snapshots`` resets what a
        session changed from it); None once reported, or for a job no snapshot keeps."""
        self.key = podgroup.key
        self.name = podgroup.meta.name
        self.namespace = podgroup.meta.namespace
        self.queue = podgroup.queue
        self.priority = priority
        self.preemption_policy = ""
        """Its priority class's ``preemptionPolicy`` ("" without a class)."""
        self.creation_ts = podgroup.meta.creation_ts
        if podgroup.preemptibility:
            self.preemptible = podgroup.preemptibility == "preemptible"
        else:
            self.preemptible = priority < names.PREEMPTIBLE_BELOW_PRIORITY
        self.last_start_ts = podgroup.last_start_ts
        self.last_eviction_ts = podgroup.last_eviction_ts
        self.stale_ts = podgroup.stale_ts
        self.tasks: dict[str, TaskInfo] = {}
        self.fit_errors: list[JobFitError] = []
        self.task_fit_errors: dict[str, TaskFitErrors] = {}
        self.tasks_to_allocate_cache: list[TaskInfo] | None = None
        self.init_request_cache: tuple[float, float, float] | None = None
        self.status_version = 0
        """Counts the status changes of its tasks (what a key worked out from them holds for)."""
        self.root, self.pod_sets = _build_sets(podgroup)

    def clone_with_tasks(self, tasks: list[TaskInfo]) -> "PodGroupInfo":
        """A representative of this job holding only ``tasks`` (the same task objects), with fresh gang sets.

        Victim and preemptor simulations work on such partial views; status changes still go through the real
        job in the session.
        """
        clone = PodGroupInfo(self.podgroup, self.priority)
        clone.last_start_ts, clone.stale_ts = self.last_start_ts, self.stale_ts
        clone.preemption_policy = self.preemption_policy
        for task in tasks:
            clone.add_task(task)
        return clone

    def add_task(self, task: TaskInfo) -> None:
        """Attach a pod; pods naming an unknown sub-group are ignored, as in KAI."""
        pod_set = self.pod_sets.get(task.subgroup or names.DEFAULT_SUBGROUP)
        if pod_set is None:
            return
        pod_set.tasks[task.key] = task
        self.tasks[task.key] = task

    def pod_set_of(self, task: TaskInfo) -> PodSet:
        return self.pod_sets[task.subgroup or names.DEFAULT_SUBGROUP]

    def set_status(self, task: TaskInfo, status: PodStatus) -> None:
        task.status = status
        self.tasks_to_allocate_cache = None
        self.init_request_cache = None
        self.status_version += 1
        if self.journal is not None:
            self.journal.append(self)
            self.journal = None

    def count(self, statuses: frozenset[PodStatus]) -> int:
        return len([task for task in self.tasks.values() if task.status in statuses])

    @property
    def num_allocated(self) -> int:
        return self.count(ALLOCATED)

    def is_ready_for_scheduling(self) -> bool:
        return self.root.is_ready_for_scheduling()

    def not_ready_message(self) -> str:
        """KAI's NotReady explanation: which pod sets have fewer live, ungated pods than their gang size."""
        message = "Job is not ready for scheduling."
        for pod_set in self.pod_sets.values():
            if pod_set.is_ready_for_scheduling():
                continue
            alive, gated = pod_set.count(ALIVE), pod_set.count(GATED)
            if pod_set.name == names.DEFAULT_SUBGROUP:
                message += f" Waiting for {pod_set.min_available} pods, currently {alive} exist, {gated} are gated"
            else:
                message += (
                    f" Waiting for {pod_set.min_available} pods for SubGroup {pod_set.name}, currently {alive} "
                    f"exist, {gated} are gated."
                )
        for group in self.root.unreachable():  # kai's explanation after KAI's text, which names no pod set here
            message += f" ({group.too_many_text()}: the gang can never start)"
        return message

    def not_ready_reason(self) -> Reason:
        """The typed form of ``not_ready_message``: gated pods (remove their gates) or missing pods (create them)."""
        sets, fixes, gated_pods = [], [], []
        for pod_set in self.pod_sets.values():
            if pod_set.is_ready_for_scheduling():
                continue
            alive, gated = pod_set.count(ALIVE), pod_set.count(GATED)
            subgroup = "" if pod_set.name == names.DEFAULT_SUBGROUP else pod_set.name
            sets.append({"subgroup": subgroup, "minMember": pod_set.min_available, "exist": alive, "gated": gated})
            gated_pods += sorted(t.key for t in pod_set.tasks.values() if t.status is PodStatus.GATED)
            missing = pod_set.min_available - (alive - gated)
            if missing > gated:  # ungating is not enough: pods are missing too
                fixes.append(Fix(FixKind.CREATE_PODS, {"subgroup": subgroup, "count": missing - gated}))
        if gated_pods:
            gates = Fix(FixKind.REMOVE_GATES, {"pods": gated_pods})
            return Reason(ReasonKind.SCHEDULING_GATE, {"podSets": sets, "gatedPods": gated_pods}, (gates, *fixes))
        unreachable = [group.too_many_text() for group in self.root.unreachable()]
        evidence: dict[str, object] = {"podSets": sets}
        if unreachable:
            evidence["unreachable"] = unreachable
        return Reason(ReasonKind.GANG_INCOMPLETE, evidence, tuple(fixes))

    def has_pending(self) -> bool:
        return any(task.status is PodStatus.PENDING for task in self.tasks.values())

    def has_active_allocated(self) -> bool:
        return any(task.status in ACTIVE_ALLOCATED for task in self.tasks.values())

    def is_gang_satisfied(self) -> bool:
        return all(ps.active_used >= ps.min_available for ps in self.pod_sets.values())

    def should_pipeline(self) -> bool:
        """A pod set that waits on releasing resources and is below its gang size makes the whole job wait."""
        for pod_set in self.pod_sets.values():
            statuses = [task.status for task in pod_set.tasks.values()]
            if PodStatus.PIPELINED in statuses:
                allocated = sum(1 for s in statuses if s in ACTIVE_ALLOCATED and s is not PodStatus.PIPELINED)
                if allocated < pod_set.min_available:
                    return True
        return False

    def is_gang(self) -> bool:
        return any(ps.min_available > 1 for ps in self.pod_sets.values())

    def preemption_delay_end(self) -> float | None:
        """When this podgroup may first make others be evicted: its preemption delay after its creation or its own
        last eviction, whichever is later; None without a (positive) delay."""
        delay = self.podgroup.preemption_delay_s
        if delay is None or delay <= 0:
            return None
        anchor = self.creation_ts
        if self.last_eviction_ts is not None and self.last_eviction_ts > anchor:
            anchor = self.last_eviction_ts
        return anchor + delay

    def within_preemption_delay(self, now: float) -> bool:
        end = self.preemption_delay_end()
        return end is not None and now < end

    def add_fit_error(self, error: JobFitError) -> None:
        self.fit_errors.append(error)

    def __repr__(self) -> str:
        return f"PodGroupInfo({self.key}, queue={self.queue}, priority={self.priority})"


def _build_sets(podgroup: PodGroup) -> tuple[SubGroupSet, dict[str, PodSet]]:
    """The gang tree. Without sub-groups, one pod set of ``minMember`` pods (1 when unset; 0: every pod elastic, as
    KAI's main since #1989, where v0.17 counted it as 1); with them, a leaf without ``minMember`` has gang size 0."""
    root = SubGroupSet(names.DEFAULT_SUBGROUP, podgroup.topology, podgroup.min_subgroup)
    if not podgroup.subgroups:
        pod_set = PodSet(names.DEFAULT_SUBGROUP, podgroup.min_member, None)
        pod_set.parent = root
        root.pod_sets.append(pod_set)
        return root, {pod_set.name: pod_set}
    parents = {sub.parent.lower() for sub in podgroup.subgroups if sub.parent}
    sets: dict[str, SubGroupSet] = {}
    pod_sets: dict[str, PodSet] = {}
    for sub in podgroup.subgroups:
        if sub.name.lower() in parents:
            sets[sub.name.lower()] = SubGroupSet(sub.name, sub.topology, sub.min_subgroup)
        else:
            pod_sets[sub.name] = PodSet(sub.name, sub.min_member or 0, sub.topology)
    for sub in podgroup.subgroups:
        parent = sets.get(sub.parent.lower()) if sub.parent else root
        if parent is None:
            continue
        if sub.name.lower() in sets:
            child = sets[sub.name.lower()]
            child.parent = parent
            parent.children.append(child)
        else:
            pod_sets[sub.name].parent = parent
            parent.pod_sets.append(pod_sets[sub.name])
    return root, pod_sets

"""Jobs ordered across the queue hierarchy (KAI's JobsOrderByQueues).

A tree mirrors the queues: leaves hold jobs in job order, inner nodes hold children ordered by the queue order of
each child's best job. Popping walks from the root taking the best child at each level; because allocations
change queue shares, the popped path is marked and re-sifted (Go's heap.Fix(0)) on the next walk. In victim mode
both orders are reversed and a queue is compared with the victims already taken from it.

Job keys are a strict order (``order_key``), so a leaf is a sorted run (``SortedJobs``) built by one sort; the inner
heaps are built as pushing one job at a time would build them (``assemble``), since their shape matters. A
per-queue depth limit (a heap that drops an element when full) keeps Go's heap for the leaves too.
"""

from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from operator import itemgetter
from typing import TypeVar

from kai.core.framework.queueing.go_heap import GoHeap
from kai.core.framework.queueing.sorted_jobs import Key, SortedJobs
from kai.core.framework.session import Session
from kai.core.model import names
from kai.core.model.duration import format_duration
from kai.core.model.meta import format_time
from kai.core.state.fit_errors import PREEMPTION_DELAY_NOT_ELAPSED, JobFitError
from kai.core.state.podgroup_info import PodGroupInfo
from kai.core.state.queue_info import QueueInfo
from kai.core.state.reasons import Fix, FixKind, Reason, ReasonKind

T = TypeVar("T")


@dataclass(eq=False)
class _QueueNode:
    queue: QueueInfo
    is_leaf: bool
    jobs: GoHeap[PodGroupInfo] | SortedJobs | None = None
    children: GoHeap["_QueueNode"] | None = None
    parent: "_QueueNode | None" = None
    needs_reorder: bool = False

    def empty(self) -> bool:
        heap = self.jobs if self.is_leaf else self.children
        return heap is None or len(heap) == 0


@dataclass
class JobQueueOptions:
    filter_non_pending: bool = False
    filter_unready: bool = False
    filter_non_preemptible: bool = False
    filter_non_active_allocated: bool = False
    filter_within_preemption_delay: bool = False
    """Eviction-triggering actions skip jobs still within their preemption delay (and say so in their fit errors)."""
    victim_queue: bool = False
    max_jobs_queue_depth: int = -1


def order_key(ssn: Session, job: PodGroupInfo) -> Key:
    """The session's job order key, then the job's key: a strict order even for podgroups with the same UID (KAI
    keys its maps by UID; their order is then up to the heap). A session job's key is kept until one of its tasks
    changes status (the order plugins look at its own pods only); a partial representative's is worked out anew."""
    if ssn.jobs.get(job.key) is not job:
        return (*ssn.job_key(job), job.key)
    cached = ssn.order_keys.get(job.key)
    if cached is None or cached[0] != job.status_version:
        cached = ssn.order_keys[job.key] = (job.status_version, (*ssn.job_key(job), job.key))
    return cached[1]


def queue_admits(ssn: Session, job: PodGroupInfo) -> bool:
    """The job's queue can hold jobs: a leaf, known, under a known parent."""
    queue = ssn.queues.get(job.queue)
    if queue is None or not queue.is_leaf:
        return False
    return not queue.parent or queue.parent in ssn.queues


COMPARED_LIMIT = 1 << 14
"""Queue comparisons a queue remembers at most (``JobsOrderByQueues._remembered_less``)."""

LinkEvent = tuple[str, PodGroupInfo, list[tuple[str, PodGroupInfo]]]
"""A leaf queue linked into the tree when its first job is pushed: the queue, that job, and the leaves linked
before whose best job so far changed since the previous link, each with that job (what they show meanwhile)."""


@dataclass
class JobsOrderByQueues:
    ssn: Session
    options: JobQueueOptions
    _roots: GoHeap[_QueueNode] | None = None
    _nodes: dict[str, _QueueNode] = field(default_factory=dict)
    _popped: dict[str, list[PodGroupInfo]] = field(default_factory=dict)
    _keys: dict[int, Key] = field(default_factory=dict)
    """Order keys of the jobs in depth-limited (Go heap) leaves."""
    fresh: Callable[[], bool] | None = None
    """Whether the runs this queue shares (``job_index``) are still as they were made; a copy must be."""
    _compared: dict[tuple[int, int, int, int], tuple[QueueInfo, QueueInfo, PodGroupInfo, PodGroupInfo, bool]] = field(
        default_factory=dict
    )
    """Queue order of two queues showing two jobs, while no allocation changes (``_remembered_less``)."""
    _compared_at: int = -1
    """The session's ``allocation_version`` the comparisons hold for."""

    def initialize(self, jobs: dict[str, PodGroupInfo]) -> None:
        admitted = [job for job in jobs.values() if self._admits(job)]
        if self.options.max_jobs_queue_depth >= 0:
            for job in admitted:
                self.push(job)
        else:
            self._build(admitted)

    def _admits(self, job: PodGroupInfo) -> bool:
        opts = self.options
        if not queue_admits(self.ssn, job):
            return False
        if opts.filter_non_pending and not job.has_pending():  # the cheaper test first: most jobs run
            return False
        if opts.filter_unready and not job.is_ready_for_scheduling():
            return False
        if opts.filter_non_preemptible and not job.preemptible:
            return False
        if opts.filter_non_active_allocated and not job.has_active_allocated():
            return False
        if opts.filter_within_preemption_delay and job.within_preemption_delay(self.ssn.now):
            _record_preemption_delay(job)
            return False
        return not (opts.filter_within_preemption_delay and never_preempts(self.ssn, job))

    def _build(self, jobs: list[PodGroupInfo]) -> None:
        """What pushing ``jobs`` in turn builds: each leaf sorted once, the links replayed (``assemble``)."""
        ssn, worst_first = self.ssn, self.options.victim_queue
        members: dict[str, list[tuple[Key, PodGroupInfo]]] = {}
        best: dict[str, tuple[Key, PodGroupInfo]] = {}
        changed: dict[str, None] = {}
        events: list[LinkEvent] = []
        for job in jobs:
            uid = ssn.queues[job.queue].uid
            key = order_key(ssn, job)
            pairs = members.get(uid)
            if pairs is None:
                events.append((uid, job, [(other, best[other][1]) for other in changed]))
                changed.clear()
                members[uid], best[uid] = [(key, job)], (key, job)
                continue
            pairs.append((key, job))
            if (key > best[uid][0]) if worst_first else (key < best[uid][0]):
                best[uid] = (key, job)
                changed[uid] = None
        runs = {}
        for uid, pairs in members.items():
            pairs.sort(key=itemgetter(0))
            runs[uid] = SortedJobs([key for key, _ in pairs], [job for _, job in pairs], worst_first)
        self.assemble(runs, events)

    def assemble(self, runs: dict[str, SortedJobs], events: list[LinkEvent]) -> None:
        """Fills an empty queue as pushing its jobs one by one would: leaves are linked into the tree in the order
        of ``events``, each showing its first job and the leaves before showing their best job so far (the inner
        heaps' shape depends on it: queue order is not a strict order and only a heap's top is re-sifted); then
        each leaf gets its sorted run and, as after any push, every node is to be re-sifted."""
        worst_first = self.options.victim_queue
        for uid, first, shown in events:
            for other, job in shown:
                self._nodes[other].jobs = SortedJobs([()], [job], worst_first)
            leaf = _QueueNode(self.ssn.queues[uid], True, jobs=SortedJobs([()], [first], worst_first))
            self._nodes[uid] = leaf
            self._link(leaf)
        for uid, run in runs.items():
            self._nodes[uid].jobs = run
        for node in self._nodes.values():
            node.needs_reorder = True

    def empty(self) -> bool:
        return self._roots is None or len(self._roots) == 0

    def leaf_queues(self) -> list[str]:
        """The leaf queues that hold jobs now."""
        return [uid for uid, node in self._nodes.items() if node.is_leaf and not node.empty()]

    def copy(self) -> "JobsOrderByQueues":
        """The same queue to pop on its own: each heap copied as it is, no job re-keyed."""
        assert self.fresh is None or self.fresh(), "a queue made from an index is copied after the index changed"
        twin = JobsOrderByQueues(
            self.ssn,
            self.options,
            _keys=dict(self._keys),
            _popped={k: list(v) for k, v in self._popped.items()},
            fresh=self.fresh,
        )
        copies = {
            id(node): _QueueNode(node.queue, node.is_leaf, needs_reorder=node.needs_reorder)
            for node in self._nodes.values()
        }
        for uid, node in self._nodes.items():
            twin._nodes[uid] = copy = copies[id(node)]
            copy.parent = copies[id(node.parent)] if node.parent is not None else None
            if isinstance(node.jobs, SortedJobs):
                copy.jobs = node.jobs.shared()
            elif node.jobs is not None:
                copy.jobs = _heap(twin._job_less, node.jobs.max_size, list(node.jobs.items))
            if node.children is not None:
                copy.children = _heap(twin._node_less, -1, [copies[id(child)] for child in node.children.items])
        if self._roots is not None:
            twin._roots = _heap(twin._node_less, -1, [copies[id(root)] for root in self._roots.items])
        return twin

    def push(self, job: PodGroupInfo) -> None:
        queue = self.ssn.queues[job.queue]
        if not queue.is_leaf:
            return
        key = order_key(self.ssn, job)
        leaf = self._nodes.get(queue.uid)
        created = leaf is None
        if leaf is None:
            depth = self.options.max_jobs_queue_depth
            jobs = GoHeap(self._job_less, depth) if depth >= 0 else SortedJobs([], [], self.options.victim_queue)
            leaf = _QueueNode(queue, True, jobs=jobs)
            self._nodes[queue.uid] = leaf
        if isinstance(leaf.jobs, SortedJobs):
            leaf.jobs.insert(key, job)
        else:
            assert leaf.jobs is not None
            self._keys[id(job)] = key
            leaf.jobs.push(job)
        if created:
            self._link(leaf)
        self._mark(leaf)

    def pop(self) -> PodGroupInfo | None:
        if self._roots is None:
            return None
        leaf = self._descend(self._roots)
        if leaf is None or leaf.jobs is None:
            return None
        job = leaf.jobs.pop()
        if self.options.victim_queue:
            self._popped.setdefault(leaf.queue.uid, []).append(job)
        self._after_pop(leaf)
        return job

    def ordered(self, wanted: list[PodGroupInfo]) -> Iterator[PodGroupInfo]:
        """Consumes the queue: the ``wanted`` jobs that are queued, in pop order; the others are popped unseen, and
        none after the last wanted. Once the wanted ones left are all in one leaf they come straight from it: a
        leaf's own order is fixed at push, so pops from other leaves (and allocations between) could not change
        it."""
        leaf_of: dict[str, str] = {}
        keys: dict[str, Key] = {}
        for one in wanted:
            queue = self.ssn.queues.get(one.queue)
            leaf = self._nodes.get(queue.uid) if queue is not None else None
            if leaf is None or not leaf.is_leaf or leaf.jobs is None:
                continue
            key = order_key(self.ssn, one)
            if isinstance(leaf.jobs, SortedJobs) and not leaf.jobs.holds(key):
                continue
            if isinstance(leaf.jobs, GoHeap) and all(queued.key != one.key for queued in leaf.jobs.items):
                continue
            leaf_of[one.key], keys[one.key] = leaf.queue.uid, key
        left = Counter(leaf_of.values())
        while len(left) > 1:
            job = self.pop()
            if job is None:
                return
            uid = leaf_of.pop(job.key, None)
            if uid is not None:
                left[uid] -= 1
                if not left[uid]:
                    del left[uid]
                yield job
        for uid, count in left.items():
            heap = self._nodes[uid].jobs
            if isinstance(heap, SortedJobs):
                for key in sorted((keys[job_key] for job_key in leaf_of), reverse=heap.worst_first):
                    taken = heap.take(key)
                    assert taken is not None
                    yield taken
                continue
            assert heap is not None
            while count:
                job = heap.pop()
                if job.key in leaf_of:
                    count -= 1
                    yield job

    def _job_less(self, left: PodGroupInfo, right: PodGroupInfo) -> bool:
        less = self._keys[id(left)] < self._keys[id(right)]
        return not less if self.options.victim_queue else less

    def _node_less(self, left: _QueueNode, right: _QueueNode) -> bool:
        reverse = self.options.victim_queue
        if left.empty():
            return not reverse
        if right.empty():
            return reverse
        left_job, left_victims = self._best(left)
        right_job, right_victims = self._best(right)
        if reverse:
            return not self.ssn.queue_less(left.queue, right.queue, left_job, right_job, left_victims, right_victims)
        if left_job is None or right_job is None:
            return self.ssn.queue_less(left.queue, right.queue, left_job, right_job, [], [])
        return self._remembered_less(left.queue, right.queue, left_job, right_job)

    def _remembered_less(
        self, left: QueueInfo, right: QueueInfo, left_job: PodGroupInfo, right_job: PodGroupInfo
    ) -> bool:
        """``queue_less`` of two queues showing two jobs, remembered until the next allocate or deallocate event: it
        reads the queues' allocations and each job's request, which changes only with the job's status. After a pop
        the heap compares the popped leaf with its siblings, and the siblings with each other as the pop before did.
        Not in victim order, where a queue is compared with the victims already taken from it as well."""
        ssn = self.ssn
        if self._compared_at != ssn.allocation_version or len(self._compared) >= COMPARED_LIMIT:
            self._compared.clear()
            self._compared_at = ssn.allocation_version
        key = (id(left_job), id(right_job), left_job.status_version, right_job.status_version)
        known = self._compared.get(key)
        if (
            known is not None
            and known[0] is left
            and known[1] is right
            and known[2] is left_job
            and known[3] is right_job
        ):
            return known[4]
        result = ssn.queue_less(left, right, left_job, right_job, [], [])
        self._compared[key] = (left, right, left_job, right_job, result)  # holds the jobs: their ids stay theirs
        return result

    def _best(self, node: _QueueNode) -> tuple[PodGroupInfo | None, list[PodGroupInfo]]:
        while not node.is_leaf:
            assert node.children is not None
            node = node.children.peek()
        if node.jobs is None or len(node.jobs) == 0:
            return None, []
        if self.options.victim_queue:
            return None, [*self._popped.get(node.queue.uid, []), node.jobs.peek()]
        return node.jobs.peek(), []

    def _link(self, child: _QueueNode) -> None:
        queue = child.queue
        if not queue.parent:
            if child.parent is None:
                if self._roots is None:
                    self._roots = GoHeap(self._node_less)
                self._roots.push(child)
            return
        parent_queue = self.ssn.queues.get(queue.parent)
        if parent_queue is None:
            return
        parent = self._nodes.get(parent_queue.uid)
        created = parent is None
        if parent is None:
            parent = _QueueNode(parent_queue, False, children=GoHeap(self._node_less))
            self._nodes[parent_queue.uid] = parent
        if child.parent is None:
            child.parent = parent
            assert parent.children is not None
            parent.children.push(child)
        if created:
            self._link(parent)

    def _descend(self, heap: GoHeap[_QueueNode]) -> _QueueNode | None:
        while True:
            if len(heap) == 0:
                return None
            node = heap.peek()
            if node.needs_reorder:
                heap.fix(0)
                node.needs_reorder = False
                continue
            if node.empty():
                return None
            if node.is_leaf:
                return node
            assert node.children is not None
            heap = node.children

    def _after_pop(self, node: _QueueNode) -> None:
        if not node.empty():
            self._mark(node)
            return
        if node.parent is not None:
            assert node.parent.children is not None
            node.parent.children.pop()
        elif self._roots is not None:
            self._roots.pop()
        del self._nodes[node.queue.uid]
        if node.parent is not None:
            self._after_pop(node.parent)

    @staticmethod
    def _mark(node: _QueueNode | None) -> None:
        while node is not None:
            node.needs_reorder = True
            node = node.parent


def _heap(less: Callable[[T, T], bool], max_size: int, items: list[T]) -> GoHeap[T]:
    heap = GoHeap(less, max_size)
    heap.items = items
    return heap


def never_preempts(ssn: Session, job: PodGroupInfo) -> bool:
    """A podgroup whose priority class says ``preemptionPolicy: Never`` (honoured unless the config says not): it
    waits for free room and never makes others be evicted (Kubernetes' non-preempting priority classes; KAI's
    design of #1032 as an endless preemption delay). It is noted as the reason it waits."""
    if not ssn.config.disruption.preemption_policy or job.preemption_policy != names.PREEMPTION_POLICY_NEVER:
        return False
    note = Reason(
        ReasonKind.PREEMPTION_NEVER, {"priorityClass": job.podgroup.priority_class_name}, (Fix(FixKind.WAIT_FOR_ROOM),)
    )
    ssn.disruption.notes[job.key] = note
    return True


def _record_preemption_delay(job: PodGroupInfo) -> None:
    if any(error.reason == PREEMPTION_DELAY_NOT_ELAPSED for error in job.fit_errors):
        return
    delay, end = job.podgroup.preemption_delay_s or 0.0, job.preemption_delay_end() or 0.0
    why = Reason(
        ReasonKind.PREEMPTION_DELAY, {"delaySeconds": delay, "until": end}, (Fix(FixKind.WAIT_UNTIL, {"until": end}),)
    )
    job.add_fit_error(
        JobFitError(
            PREEMPTION_DELAY_NOT_ELAPSED,
            [
                f"Workload is within its preemption delay window ({format_duration(delay)}) and may not trigger "
                f"evictions before {format_time(end)}"
            ],
            why=why,
        )
    )

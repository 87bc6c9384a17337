"""Jobs ordered across the queue hierarchy (KAI's JobsOrderByQueues).

A tree mirrors the queues: leaves hold jobs in job order, inner nodes hold children ordered by the queue order of
each child's best job. Popping walks from the root taking the best child at each level; because allocations
change queue shares, the popped path is marked and re-sifted (Go's heap.Fix(0)) on the next walk. In victim mode
both orders are reversed and a queue is compared with the victims already taken from it.

Job keys are a strict order (``order_key``), so a leaf is a sorted run (``SortedJobs``) built by one sort; the inner
heaps are built as pushing one job at a time would build them: queue order is not a strict order and only the top
of a heap is re-sifted, so their shape matters. A per-queue depth limit (a heap that drops an element when full)
keeps Go's heap for the leaves too.
"""

from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from operator import itemgetter
from typing import TypeVar

from kai.core.framework.go_heap import GoHeap
from kai.core.framework.session import Session
from kai.core.framework.sorted_jobs import Key, SortedJobs
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
    cached = job.order_key_cache
    if cached is None or cached[0] is not ssn.job_order_keys:
        cached = job.order_key_cache = (ssn.job_order_keys, (*ssn.job_key(job), job.key))
    return cached[1]


@dataclass
class JobsOrderByQueues:
    ssn: Session
    options: JobQueueOptions
    _roots: GoHeap[_QueueNode] | None = None
    _nodes: dict[str, _QueueNode] = field(default_factory=dict)
    _popped: dict[str, list[PodGroupInfo]] = field(default_factory=dict)
    _keys: dict[int, Key] = field(default_factory=dict)
    """Order keys of the jobs in depth-limited (Go heap) leaves."""
    _where: dict[str, tuple[str, Key]] = field(default_factory=dict)
    """Each queued job's leaf queue and order key, by job key."""

    def initialize(self, jobs: dict[str, PodGroupInfo]) -> None:
        admitted = [job for job in jobs.values() if self._admits(job)]
        if self.options.max_jobs_queue_depth >= 0:
            for job in admitted:
                self.push(job)
        else:
            self._build(admitted)

    def _admits(self, job: PodGroupInfo) -> bool:
        opts = self.options
        queue = self.ssn.queues.get(job.queue)
        if queue is None or not queue.is_leaf:
            return False
        if queue.parent and queue.parent not in self.ssn.queues:
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
        return True

    def _build(self, jobs: list[PodGroupInfo]) -> None:
        """What pushing ``jobs`` in turn builds. A leaf is linked into the tree when its first job comes, while
        every leaf linked before shows its best job so far; only then is each leaf given all its jobs, sorted."""
        ssn, worst_first, where = self.ssn, self.options.victim_queue, self._where
        members: dict[str, list[tuple[Key, PodGroupInfo]]] = {}
        for job in jobs:
            queue = ssn.queues[job.queue]
            key = order_key(ssn, job)
            where[job.key] = (queue.uid, key)
            leaf = self._nodes.get(queue.uid)
            if leaf is None:
                leaf = _QueueNode(queue, True, jobs=SortedJobs([key], [job], worst_first))
                self._nodes[queue.uid] = leaf
                members[queue.uid] = [(key, job)]
                self._link(leaf)
                continue
            members[queue.uid].append((key, job))
            shown = leaf.jobs
            assert isinstance(shown, SortedJobs)
            if (key > shown.keys[0]) if worst_first else (key < shown.keys[0]):
                shown.keys[0], shown.jobs[0] = key, job
        for uid, pairs in members.items():
            pairs.sort(key=itemgetter(0))
            self._nodes[uid].jobs = SortedJobs([key for key, _ in pairs], [job for _, job in pairs], worst_first)
        for node in self._nodes.values():
            node.needs_reorder = True

    def empty(self) -> bool:
        return self._roots is None or len(self._roots) == 0

    def copy(self) -> "JobsOrderByQueues":
        """The same queue to pop on its own: each heap copied as it is, no job re-keyed."""
        twin = JobsOrderByQueues(
            self.ssn,
            self.options,
            _keys=dict(self._keys),
            _where=dict(self._where),
            _popped={k: list(v) for k, v in self._popped.items()},
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
        self._where[job.key] = (queue.uid, key)
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
            dropped = leaf.jobs.push(job)
            if dropped is not None:
                self._where.pop(dropped.key, None)
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
        self._where.pop(job.key, None)
        if self.options.victim_queue:
            self._popped.setdefault(leaf.queue.uid, []).append(job)
        self._after_pop(leaf)
        return job

    def ordered(self, keys: set[str]) -> Iterator[PodGroupInfo]:
        """Consumes the queue: the queued jobs with these keys, in pop order; the others are popped unseen, and none
        after the last wanted. Once the wanted ones left are all in one leaf they come straight from it: a leaf's
        own order is fixed at push, so pops from other leaves (and allocations between) could not change it."""
        leaf_of = {key: self._where[key][0] for key in keys if key in self._where}
        left = Counter(leaf_of.values())
        while len(left) > 1:
            job = self.pop()
            if job is None:
                return
            uid = leaf_of.get(job.key)
            if uid is not None:
                left[uid] -= 1
                if not left[uid]:
                    del left[uid]
                del leaf_of[job.key]
                yield job
        for uid, wanted in left.items():
            heap = self._nodes[uid].jobs
            if isinstance(heap, SortedJobs):
                order = sorted((self._where[key][1] for key in leaf_of), reverse=heap.worst_first)
                for key in order:
                    taken = heap.take(key)
                    assert taken is not None
                    yield taken
                continue
            assert heap is not None
            while wanted:
                job = heap.pop()
                if job.key in leaf_of:
                    wanted -= 1
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
        result = self.ssn.queue_less(left.queue, right.queue, left_job, right_job, left_victims, right_victims)
        return not result if reverse else result

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

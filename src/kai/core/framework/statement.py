"""Statement: a journal of virtual allocate / pipeline / evict operations, each with its own undo.

Nothing is copied wholesale: every operation mutates the session in place and records how to reverse itself, so a
checkpoint is the journal length and a rollback undoes entries newest first (STYLE.md §2.7). ``commit`` turns
the surviving operations into decisions.

An operation keeps the accounting of the one or two nodes it touched as it was before (``NodeState``: a column of
the arrays and the node's shared GPUs), and a rollback puts that back: undone newest first, each operation finds
the nodes as it left them, so restoring them is exact, where replaying the shared-GPU arithmetic backwards is not
in every order (a fraction's GPU released, re-pipelined into a new group, then un-evicted left a node a GPU
short). The two undos that are not newest first — an un-evict, a gang's allocations turned into pipelines — move
the task back instead.
"""

from collections.abc import Callable
from dataclasses import dataclass

from kai.core.framework.decisions import Bind, Eviction, Pipeline
from kai.core.framework.session import Session
from kai.core.model.numa import NumaPlacement
from kai.core.model.resources import GpuRequestKind
from kai.core.state.node_table import NodeState
from kai.core.state.pod_status import PodStatus
from kai.core.state.task import TaskInfo


@dataclass(slots=True)
class Operation:
    kind: str
    task: TaskInfo
    node: str
    message: str
    undo: Callable[[], None]
    """Moves the task back, whatever happened since (out-of-order undo)."""
    evictor: str = ""
    why: str = ""
    valid: bool = True
    restore: Callable[[], None] | None = None
    """Puts the session back as it was before the operation, once every later operation is undone."""


@dataclass(frozen=True, slots=True)
class Previous:
    """A task's place before an operation, and the accounting of the nodes the operation touched."""

    status: PodStatus
    node_name: str
    is_virtual: bool
    gpu_groups: tuple[str, ...]
    accepted_gpus: float
    numa_placement: NumaPlacement | None
    on_node: bool
    """The task was in its node's task list (a pending task with a nominated node is not)."""
    nodes: tuple[NodeState, ...]

    @classmethod
    def of(cls, task: TaskInfo, on_node: bool, nodes: tuple[NodeState, ...]) -> "Previous":
        """The task's place now."""
        return cls(
            task.status,
            task.node_name,
            task.is_virtual,
            task.gpu_groups,
            task.accepted_gpus,
            task.numa_placement,
            on_node,
            nodes,
        )


class Statement:
    def __init__(self, ssn: Session) -> None:
        self.ssn = ssn
        self.operations: list[Operation] = []
        self.evictions: dict[int, list[Operation]] = {}
        """The journal's evictions of each task (by its id), in journal order: an un-evict looks its task's up
        instead of scanning the journal (a simulation re-places thousands of victims, most where they were)."""

    def checkpoint(self) -> int:
        return len(self.operations)

    def rollback(self, checkpoint: int) -> None:
        while len(self.operations) > checkpoint:
            op = self.operations.pop()
            if op.kind == "evict":
                self._forget_eviction(op)
            if op.valid:
                (op.restore or op.undo)()

    def _forget_eviction(self, op: Operation) -> None:
        """Drops a journal entry popped by a rollback from its task's evictions (the newest of them)."""
        evictions = self.evictions[id(op.task)]
        assert evictions[-1] is op
        evictions.pop()
        if not evictions:
            del self.evictions[id(op.task)]

    def discard(self) -> None:
        self.rollback(0)

    def _move(
        self, task: TaskInfo, status: PodStatus, node_name: str, gpu_groups: tuple[str, ...] | None = None
    ) -> Previous:
        """Re-place a task with a new status/node (and GPU groups), keeping node accounting in step."""
        nodes = self.ssn.nodes
        old_node = nodes.by_name.get(task.node_name) if task.node_name else None
        new_node = nodes.by_name.get(node_name) if node_name else None
        on_node = old_node is not None and task.key in old_node.tasks
        touched = {id(n): n for n in (old_node, new_node) if n is not None}.values()
        previous = Previous.of(task, on_node, tuple(nodes.save(n) for n in touched))
        if old_node is not None and on_node:
            nodes.remove_task(task, old_node)
        self._set_status(task, status)
        task.node_name = node_name
        if gpu_groups is not None:
            task.gpu_groups = gpu_groups
        if new_node is not None:
            nodes.add_task(task, new_node)
        return previous

    def _set_status(self, task: TaskInfo, status: PodStatus) -> None:
        self.ssn.jobs[task.job_key].set_status(task, status)
        if status is PodStatus.PENDING:
            self.ssn.mark_pending(task.job_key)

    def _move_back(self, task: TaskInfo, previous: Previous) -> None:
        """The task where it was, by moving it there (an undo out of order)."""
        self._move(task, previous.status, previous.node_name, previous.gpu_groups)
        task.is_virtual = previous.is_virtual
        task.numa_placement = previous.numa_placement

    def _put_back(self, task: TaskInfo, previous: Previous) -> None:
        """The task and the nodes it touched exactly as before (an undo newest first)."""
        nodes = self.ssn.nodes
        node = nodes.by_name.get(task.node_name) if task.node_name else None
        if node is not None and node.tasks.get(task.key) is task:
            del node.tasks[task.key]
        for state in previous.nodes:
            nodes.restore(state)
        self._set_status(task, previous.status)
        task.node_name = previous.node_name
        task.gpu_groups = previous.gpu_groups
        task.is_virtual = previous.is_virtual
        task.accepted_gpus = previous.accepted_gpus
        task.numa_placement = previous.numa_placement
        old_node = nodes.by_name.get(previous.node_name) if previous.on_node else None
        if old_node is not None:
            old_node.tasks[task.key] = task

    def _placement(self, kind: str, task: TaskInfo, node_name: str, message: str, previous: Previous) -> None:
        """Journals an allocation or a pipeline: undone, the task's queue is no longer charged for it."""

        def undo() -> None:
            self.ssn.deallocated(task)
            self._move_back(task, previous)

        def restore() -> None:
            self.ssn.deallocated(task)
            self._put_back(task, previous)

        self.operations.append(Operation(kind, task, node_name, message, undo, restore=restore))

    def allocate(self, task: TaskInfo, node_name: str, gpu_groups: tuple[str, ...] | None = None) -> None:
        previous = self._move(task, PodStatus.ALLOCATED, node_name, gpu_groups)
        self.ssn.allocated(task)
        task.is_virtual = True
        self._placement("allocate", task, node_name, "", previous)

    def pipeline(
        self,
        task: TaskInfo,
        node_name: str,
        gpu_groups: tuple[str, ...] | None = None,
        update_if_on_node: bool = True,
    ) -> None:
        """Place a task on releasing resources. A victim re-placed on the node it was virtually evicted from is
        un-evicted instead (it simply stays), unless asked to update or it moves to another shared GPU."""
        node = self.ssn.nodes.by_name.get(node_name)
        if node is not None and node.tasks.get(task.key) is task and not update_if_on_node:
            moves_gpu = bool(gpu_groups) and task.request.is_shared_gpu and gpu_groups != task.gpu_groups
            if not moves_gpu:
                self.unevict(task)
                return
        previous = self._move(task, PodStatus.PIPELINED, node_name, gpu_groups)
        self.ssn.allocated(task)
        task.is_virtual = True
        message = f"Pod {task.namespace}/{task.name} was pipelined to node {node_name}"
        self._placement("pipeline", task, node_name, message, previous)

    def evict(self, task: TaskInfo, message: str, evictor: str = "", why: str = "") -> None:
        """Virtually evict a placed task. Evicting a task that is already releasing does nothing: KAI would free
        its resources from the queue a second time; a pipelined task (placed by this session, nothing runs) goes
        back to pending instead: made releasing, it would hold room it never had (docs/deviations.md). So does a
        task an earlier action of this cycle placed (its bind not written yet): deleted, a pod that never ran would
        be made again by its controller, placed, and taken again, every cycle."""
        if task.status is PodStatus.RELEASING:
            return
        if task.status is PodStatus.PIPELINED:
            self._withdraw("unpipeline", task)
            return
        if task.status is PodStatus.BINDING and task.key in self.ssn.result.bound:
            self._withdraw("unbind", task)
            return
        self._release("evict", task, PodStatus.RELEASING, task.node_name, message, evictor, why=why)

    def _withdraw(self, kind: str, task: TaskInfo) -> None:
        """A task this session placed (pipelined, or bound by an earlier action) pending again; its decision is
        withdrawn at commit (``kind``: unpipeline or unbind)."""
        self._release(kind, task, PodStatus.PENDING, "", "", gpu_groups=())

    def _release(
        self,
        kind: str,
        task: TaskInfo,
        status: PodStatus,
        node_name: str,
        message: str,
        evictor: str = "",
        gpu_groups: tuple[str, ...] | None = None,
        why: str = "",
    ) -> None:
        """Journals a task let go (evicted, or un-pipelined): its queue is no longer charged for it; undone, it is
        charged again."""
        on_node = task.node_name
        previous = self._move(task, status, node_name, gpu_groups)
        self.ssn.deallocated(task)
        task.is_virtual = True

        def undo() -> None:
            self._move_back(task, previous)
            self.ssn.allocated(task)

        def restore() -> None:
            self._put_back(task, previous)
            self.ssn.allocated(task)

        op = Operation(kind, task, on_node, message, undo, evictor, why=why, restore=restore)
        self.operations.append(op)
        if kind == "evict":
            self.evictions.setdefault(id(task), []).append(op)

    def unevict(self, task: TaskInfo) -> None:
        """Undo the task's earliest valid eviction; rolling back past this point evicts it again."""
        for op in self.evictions.get(id(task), ()):
            if op.valid:
                node = self.ssn.nodes.by_name.get(task.node_name) if task.node_name else None
                on_node = node is not None and node.tasks.get(task.key) is task
                before = Previous.of(task, on_node, (self.ssn.nodes.save(node),) if node is not None else ())
                op.undo()
                op.valid = False

                def redo(evicted: Operation = op, before: Previous = before) -> None:
                    self._put_back(task, before)
                    self.ssn.deallocated(task)
                    evicted.valid = True

                self.operations.append(Operation("undo", task, task.node_name, "", redo))
                return

    def convert_allocated_to_pipelined(self, job_key: str) -> None:
        """A gang that waits on releasing resources waits as a whole: its allocations become pipelines."""
        kept: list[Operation] = []
        converted: list[Operation] = []
        for op in self.operations:
            if op.kind == "allocate" and op.task.job_key == job_key:
                converted.append(op)
            else:
                if converted:  # its saved accounting holds an allocation undone below: moved back if undone
                    op.restore = None
                kept.append(op)
        self.operations = kept
        groups = [op.task.gpu_groups for op in converted]
        for op in reversed(converted):
            op.undo()
        for op, gpu_groups in zip(converted, groups, strict=True):
            self.pipeline(op.task, op.node, gpu_groups)

    def commit(self, action: str, rearm_preemption_delay: bool = True) -> None:
        """Turn the surviving operations into decisions. A podgroup that loses pods records when (KAI's
        last-eviction time), which restarts its own preemption delay."""
        ssn = self.ssn
        result = ssn.result
        ssn.committed.extend(op.task.job_key for op in self.operations)
        evicted = [op for op in self.operations if op.valid and op.kind == "evict"]
        disruption = ssn.disruption
        disruption.consume(op.task for op in evicted)
        for op in self.operations:
            task = op.task
            if not op.valid or op.kind == "undo":
                continue
            if op.kind == "evict":
                result.evictions.append(
                    Eviction(
                        task.key,
                        task.job_key,
                        op.node,  # where it runs: a victim moved (pipelined elsewhere) is on its new node by now
                        action,
                        op.message,
                        op.evictor,
                        op.why,
                        disruption.budgets_of(task),
                    )
                )
                if rearm_preemption_delay:
                    ssn.jobs[task.job_key].last_eviction_ts = ssn.now
                    result.last_eviction[task.job_key] = ssn.now
            elif op.kind == "pipeline":
                result.pipelined.append(Pipeline(task.key, op.node, op.message, task.job_key))
            elif op.kind == "unpipeline":
                result.pipelined = [p for p in result.pipelined if p.pod_key != task.key]
            elif op.kind == "unbind":
                result.binds = [b for b in result.binds if b.pod_key != task.key]
                result.bound.discard(task.key)
            else:
                request = task.request
                self._set_status(task, PodStatus.BINDING)
                result.bound.add(task.key)
                result.binds.append(
                    Bind(
                        pod_key=task.key,
                        pod_uid=task.pod.meta.uid,
                        node=op.node,
                        received_resource_type=_received_type(request.gpu_kind),
                        gpu_count=request.gpu_devices,
                        gpu_portion=request.gpu_portion,
                        gpu_groups=task.gpu_groups,
                        claim_allocations=self.ssn.claim_allocations.get(task.key, ()),
                        podgroup_key=task.job_key,
                        numa_zones=task.numa_placement or (),
                    )
                )
        self.operations = []
        self.evictions = {}


def _received_type(kind: GpuRequestKind) -> str:
    if kind is GpuRequestKind.MIG:
        return "MigInstance"
    if kind in (GpuRequestKind.FRACTION, GpuRequestKind.MEMORY):
        return "Fraction"
    return "Regular"
